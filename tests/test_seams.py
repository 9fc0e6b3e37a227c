"""Guards over embroker's source: the seams between the model and its surfaces stay where
docs/architecture.md puts them."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

SOURCE = Path(__file__).resolve().parent.parent / "embroker"

#: Attributes that hold an exception's text (``AMQPError.text`` and ``reply_text``, the 1.0
#: errors' ``description``, an exception's ``args``).
_TEXT_ATTRIBUTES = frozenset({"text", "reply_text", "wire_reply_text", "description", "args"})
#: String methods that ask what a text says.
_TEXT_QUESTIONS = frozenset({"startswith", "endswith", "find", "rfind", "index", "count",
                             "__contains__"})
#: Functions of ``re`` that ask what a text says.
_PATTERN_QUESTIONS = frozenset({"match", "search", "fullmatch", "findall", "finditer"})

#: Where an exception's text is all there is to go on: an error no embroker code raises.
#: (file relative to embroker/, function) -> why.
ALLOWED = {
    ("analytics/_files.py", "list_files"):
        "Spark's reader raises a Py4J/AnalysisException whose only mark of a missing path is "
        "its text",
}


def _is_exception_text(node: ast.AST, names: frozenset[str]) -> bool:
    """``str(e)``, ``repr(e)``, ``e.text``, ``e.reply_text``, ``e.args[0]``... of an
    exception ``e``: a name an ``except`` clause binds, or a parameter typed as an error."""
    if isinstance(node, ast.Subscript):
        node = node.value
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and \
            node.func.id in ("str", "repr", "format") and node.args:
        return _names_exception(node.args[0], names)
    if isinstance(node, ast.Attribute) and node.attr in _TEXT_ATTRIBUTES:
        return _names_exception(node.value, names)
    if isinstance(node, ast.JoinedStr):
        return any(isinstance(part, ast.FormattedValue) and _names_exception(part.value, names)
                   for part in node.values)
    return False


def _names_exception(node: ast.AST, names: frozenset[str]) -> bool:
    return isinstance(node, ast.Name) and node.id in names


def _error_parameters(function: ast.FunctionDef | ast.AsyncFunctionDef) -> frozenset[str]:
    """The parameters of ``function`` annotated with an error class."""
    arguments = function.args
    return frozenset(
        arg.arg for arg in [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs]
        if arg.annotation is not None and any(
            word in ast.unparse(arg.annotation)
            for word in ("Error", "Exception", "Refused", "NotFound", "Failed")))


def _text_questions(tree: ast.AST) -> Iterator[tuple[int, str]]:
    """(line, source) of each question asked of an exception's text: in an ``except``
    clause of the name it binds, or in a function of a parameter typed as an error."""
    seen: set[tuple[int, int]] = set()
    for scope in ast.walk(tree):
        if isinstance(scope, ast.ExceptHandler) and scope.name:
            names, body = frozenset({scope.name}), scope.body
        elif isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef)):
            names, body = _error_parameters(scope), scope.body
        else:
            continue
        if not names:
            continue
        for node in (inner for statement in body for inner in ast.walk(statement)):
            asked = False
            if isinstance(node, ast.Compare):
                asked = any(isinstance(op, (ast.In, ast.NotIn, ast.Eq, ast.NotEq))
                            for op in node.ops) and any(
                    _is_exception_text(operand, names)
                    for operand in (node.left, *node.comparators))
            elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
                if node.func.attr in _TEXT_QUESTIONS:
                    asked = _is_exception_text(node.func.value, names)
                elif node.func.attr in _PATTERN_QUESTIONS and isinstance(
                        node.func.value, ast.Name) and node.func.value.id == "re":
                    asked = any(_is_exception_text(arg, names) for arg in node.args)
            elif isinstance(node, ast.Match):
                asked = _is_exception_text(node.subject, names)
            if asked and isinstance(node, (ast.expr, ast.stmt)) \
                    and (node.lineno, node.col_offset) not in seen:
                seen.add((node.lineno, node.col_offset))
                yield node.lineno, ast.unparse(node)


def _functions(tree: ast.AST) -> list[tuple[int, int, str]]:
    """(first line, last line, name) of each function, innermost last."""
    return sorted((node.lineno, node.end_lineno or node.lineno, node.name)
                  for node in ast.walk(tree)
                  if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)))


def text_questions(source: str) -> list[tuple[str, int, str]]:
    """(function, line, source) of every question asked of an exception's text in
    ``source`` (a module's text)."""
    tree = ast.parse(source)
    functions = _functions(tree)
    found = []
    for line, text in _text_questions(tree):
        inside = [name for first, last, name in functions if first <= line <= last]
        found.append((inside[-1] if inside else "<module>", line, text))
    return sorted(found)


def test_no_refusal_is_classified_by_its_text() -> None:
    """Why the model refused is data (``AMQPError.reason``, a ``Refusal``), never read back out
    of the error's words: a reworded text would silently change which answer a surface gives
    (the 1.0 management node's "ends the session" or 403, ``rabbitmqctl``'s exit texts)."""
    found, used = [], set()
    for path in sorted(SOURCE.rglob("*.py")):
        relative = path.relative_to(SOURCE).as_posix()
        for function, line, text in text_questions(path.read_text(encoding="utf-8")):
            if (relative, function) in ALLOWED:
                used.add((relative, function))
                continue
            found.append(f"embroker/{relative}:{line} ({function}): {text}")
    assert found == [], "classified by their text:\n" + "\n".join(found)
    assert used == set(ALLOWED), f"stale allowances: {set(ALLOWED) - used}"


def test_the_refusal_guard_sees_the_ways_a_text_is_asked() -> None:
    source = '''
def a(call):
    try:
        call()
    except AccessRefused as exc:
        if " refused for user " in exc.text:
            raise
def b(exc: AMQPError) -> str:
    return "in use" if "in use" in exc.reply_text else "x"
def c(call):
    try:
        call()
    except Exception as e:
        return str(e).startswith("NOT_FOUND") or re.search("gone", str(e))
def d(call):
    try:
        call()
    except AMQPError as error:
        return error.reason is Refusal.PERMISSION or error.text.splitlines()
'''
    assert [(function, line) for function, line, _ in text_questions(source)] == [
        ("a", 6), ("b", 9), ("c", 14), ("c", 14)]
