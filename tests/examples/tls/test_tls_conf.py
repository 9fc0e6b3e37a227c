"""docs/tls.md's table, line by line: what its ``rabbitmq.conf`` column says is what
``rabbitmq-server`` reads (the settings the third column names), with nothing left unused; and
the page does not say that reading them is still to come (issue 44: it said so after it was
done)."""

from __future__ import annotations

import ast
import re
from pathlib import Path
from typing import Any

from embroker.control._config import read_node_settings
from embroker.tls import TLSOptions

PAGE = Path(__file__).resolve().parents[3] / "docs" / "tls.md"
ROW = re.compile(r"^\| `(?P<conf>[\w.]+ = [^`]+)` \| (?P<cli>[^|]*) \| (?P<python>.+) \|$", re.M)
CODE = re.compile(r"`([^`]+)`")


def table() -> list[tuple[str, str, Any]]:
    """(rabbitmq.conf line, keyword, value) for each row of the settings table."""
    rows = []
    for row in ROW.finditer(PAGE.read_text(encoding="utf-8")):
        code = CODE.search(row["python"])
        assert code is not None, row[0]
        text = code[1] if re.match(r"\w+\(", code[1]) else f"f({code[1]})"  # (a bare keyword)
        call = ast.parse(text, mode="eval").body
        assert isinstance(call, ast.Call), row[0]
        (keyword,) = call.keywords
        assert keyword.arg is not None, row[0]
        rows.append((row["conf"], keyword.arg, ast.literal_eval(keyword.value)))
    return rows


def test_the_rabbitmq_conf_column_is_what_rabbitmq_server_reads(tmp_path: Path) -> None:
    rows = table()
    assert len(rows) >= 12
    etc = tmp_path / "etc" / "rabbitmq"
    etc.mkdir(parents=True)
    (etc / "rabbitmq.conf").write_text("".join(f"{conf}\n" for conf, _, _ in rows))
    (etc / "enabled_plugins").write_text("[rabbitmq_management,rabbitmq_stream].\n")
    settings = read_node_settings({"SYS_PREFIX": str(tmp_path)}, hostname="box")
    assert settings.unsupported == ()
    server = settings.server_kwargs()
    tls: dict[str, Any] = {}
    for conf, name, value in rows:
        if name.endswith("_port"):
            assert server[name] == value, conf
        elif name == "auth_mechanisms":  # (the row's line adds one: its number says where)
            assert conf.split(" = ")[1] in settings.auth_mechanisms, conf
        elif name == "ssl_cert_login_from":
            assert settings.ssl_cert_login_from == value, conf
        else:
            tls[name] = value
    assert settings.tls == TLSOptions(**tls)
    assert server["tls"] == settings.tls


def test_the_page_does_not_say_reading_rabbitmq_conf_is_to_come() -> None:
    to_come = PAGE.read_text(encoding="utf-8").split("## Not yet", 1)[1]
    assert "rabbitmq.conf" not in to_come
