"""Method classes: the generated module, defaults, metadata, equality, encoding errors, exports."""

from __future__ import annotations

import enum
import inspect
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings

import embroker.amqp091 as amqp091
from embroker.amqp091 import (
    Method,
    _codegen,
    _methods,
    encode_method_frame,
)
from embroker.amqp091._frames import decode_method
from embroker.amqp091._methods import METHOD_CLASSES
from embroker.amqp091._spec import METHODS as METHOD_SPECS
from embroker.amqp091.methods import (
    BasicAck,
    BasicConsume,
    BasicDeliver,
    BasicGet,
    BasicGetEmpty,
    BasicGetOk,
    BasicNack,
    BasicPublish,
    BasicQos,
    BasicReject,
    ChannelClose,
    ConfirmSelect,
    ConfirmSelectOk,
    ConnectionClose,
    ConnectionOpen,
    ConnectionStart,
    ConnectionUpdateSecret,
    ExchangeDeclare,
    ExchangeUnbindOk,
    QueueDeclare,
    TxSelect,
)
from tests.strategies import methods


def test_generated_module_is_up_to_date() -> None:
    """``_methods.py`` is generated from ``_spec.py``: run ``python -m embroker.amqp091._codegen``."""
    assert Path(_methods.__file__).read_text() == _codegen.render()


@settings(max_examples=400, deadline=None)
@given(method=methods())
def test_every_method_round_trips(method: Method) -> None:
    assert decode_method(method.encode()) == method


def test_spec_defaults_let_the_common_calls_be_short() -> None:
    publish = BasicPublish(exchange="x", routing_key="k")
    assert (publish.reserved_1, publish.mandatory, publish.immediate) == (0, False, False)
    assert ExchangeDeclare(exchange="e").type == "direct"
    assert QueueDeclare().arguments == {}
    assert QueueDeclare().arguments is not QueueDeclare().arguments
    assert BasicReject(delivery_tag=1).requeue is True
    assert BasicNack(delivery_tag=1).requeue is True
    assert ConnectionOpen().virtual_host == "/"
    start = ConnectionStart()
    assert (start.version_major, start.version_minor, start.mechanisms, start.locales) == (
        0, 9, "PLAIN", "en_US")


def test_class_attributes_describe_the_method() -> None:
    assert (BasicPublish.CLASS_ID, BasicPublish.METHOD_ID, BasicPublish.INDEX) == (
        60, 40, 0x003C0028)
    assert BasicPublish.NAME == "basic.publish"
    assert BasicPublish.HAS_CONTENT
    assert not BasicPublish.SYNCHRONOUS
    assert BasicPublish.REPLIES == ()
    assert BasicGet.SYNCHRONOUS
    assert (BasicGetOk, BasicGetEmpty) == BasicGet.REPLIES
    assert (ConfirmSelectOk,) == ConfirmSelect.REPLIES
    assert ConnectionUpdateSecret.NAME == "connection.update-secret"
    assert (ExchangeUnbindOk.CLASS_ID, ExchangeUnbindOk.METHOD_ID) == (40, 51)
    assert [a.attribute for a in BasicQos.ARGUMENTS] == ["prefetch_size", "prefetch_count",
                                                          "global_"]


def test_close_methods_keep_class_id_and_method_id_as_arguments() -> None:
    close = ConnectionClose(reply_code=504, reply_text="CHANNEL_ERROR", class_id=60, method_id=40)
    assert (close.class_id, close.method_id, close.CLASS_ID, close.METHOD_ID) == (60, 40, 10, 50)
    assert decode_method(close.encode()) == close
    assert ChannelClose(class_id=50).CLASS_ID == 20


@pytest.mark.parametrize("cls", list(METHOD_CLASSES.values()), ids=lambda c: c.NAME)
def test_method_classes_are_slotted_final_and_constructible_without_arguments(
        cls: type[Method]) -> None:
    method = cls()
    assert not hasattr(method, "__dict__")
    assert getattr(cls, "__final__", False)
    assert decode_method(method.encode()) == method
    assert cls.__match_args__ == tuple(a.attribute for a in cls.ARGUMENTS)  # type: ignore[attr-defined]
    assert list(inspect.signature(cls).parameters) == [a.attribute for a in cls.ARGUMENTS]


def test_equality_and_repr() -> None:
    assert BasicAck(1, True) == BasicAck(delivery_tag=1, multiple=True)
    assert BasicAck(1) != BasicAck(2)
    assert BasicAck(1) != BasicNack(1)
    assert BasicAck(1) != (1, False)
    assert repr(BasicAck(1)) == "BasicAck(delivery_tag=1, multiple=False)"
    assert BasicAck(1).as_dict() == {"delivery_tag": 1, "multiple": False}
    with pytest.raises(TypeError):
        hash(BasicAck(1))


def test_pattern_matching_on_methods() -> None:
    def route(method: Method) -> str:
        match method:
            case BasicPublish(_, exchange, routing_key):
                return f"{exchange}/{routing_key}"
            case BasicAck(tag, multiple=True):
                return f"up to {tag}"
            case _:
                return "other"

    assert route(BasicPublish(exchange="x", routing_key="k")) == "x/k"
    assert route(BasicAck(5, True)) == "up to 5"
    assert route(TxSelect()) == "other"


def test_method_table_covers_rabbitmq_extensions() -> None:
    names = {spec.name for spec in METHOD_SPECS}
    assert {"connection.blocked", "connection.unblocked", "connection.update-secret",
            "connection.update-secret-ok", "exchange.bind", "exchange.bind-ok",
            "exchange.unbind", "exchange.unbind-ok", "basic.nack", "confirm.select",
            "confirm.select-ok"} <= names
    assert len(names) == len(METHOD_SPECS) == 64


# -- encoding errors ------------------------------------------------------------------------------


def test_shortstr_over_255_bytes_is_a_clear_value_error() -> None:
    with pytest.raises(ValueError, match=r"basic.publish argument routing_key=.*over the "
                                         r"255-byte limit"):
        BasicPublish(routing_key="k" * 256).encode()
    with pytest.raises(ValueError, match="over the 255-byte limit"):
        encode_method_frame(1, BasicConsume(queue="é" * 128))


@pytest.mark.parametrize(
    ("method", "error", "text"),
    [
        (BasicAck(delivery_tag=-1), ValueError, "delivery_tag=-1: -1 does not fit"),
        (BasicAck(delivery_tag=2**64), ValueError, "does not fit an unsigned 64-bit longlong"),
        (BasicQos(prefetch_count=65536), ValueError, "prefetch_count"),
        (BasicQos(prefetch_count="10"), TypeError, "short must be int"),  # type: ignore[arg-type]
        (BasicPublish(exchange=b"x"), TypeError, "shortstr must be str"),  # type: ignore[arg-type]
        (QueueDeclare(arguments={"x": object()}), TypeError, "cannot encode object"),
        (QueueDeclare(arguments=[1]), TypeError, "must be a mapping"),  # type: ignore[arg-type]
    ],
)
def test_bad_arguments_are_clear_errors(method: Method, error: type[Exception], text: str) -> None:
    with pytest.raises(error, match=text):
        method.encode()


def test_truthy_values_make_bits() -> None:
    method = BasicDeliver(redelivered=2)  # type: ignore[arg-type]
    assert decode_method(method.encode()) == BasicDeliver(redelivered=True)


# -- the public API -------------------------------------------------------------------------------


def test_all_names_exist_and_methods_cover_every_method_class() -> None:
    for module in (amqp091, amqp091.methods):
        for name in module.__all__:
            assert hasattr(module, name), name
        assert len(set(module.__all__)) == len(module.__all__)
    assert {cls.__name__ for cls in METHOD_CLASSES.values()} == set(amqp091.methods.__all__)


def test_the_package_exports_only_what_other_layers_use() -> None:
    # As h11: the connection, the codec's entry points and the method classes' namespace.
    assert len(amqp091.__all__) <= 25
    assert all(not name.startswith("_") for name in amqp091.__all__)


@pytest.mark.parametrize("module", [amqp091, amqp091.methods], ids=["amqp091", "methods"])
def test_public_classes_are_final(module: Any) -> None:
    for name in module.__all__:
        value: Any = getattr(module, name)
        if inspect.isclass(value) and value.__module__.startswith("embroker.amqp091."):
            if value in (Method,) or issubclass(value, Exception):
                continue
            if issubclass(value, enum.Enum) or value.__name__ in ("ArgumentSpec", "MethodSpec"):
                continue  # an enum with members cannot be subclassed anyway
            assert getattr(value, "__final__", False), name
