"""The hardened Jinja2 sandbox prompt templates run in (PRD §4.5 模板变量插值).

Prompt templates are written by operators and run inside the server process, on the
runtime's thread, so a template must not be able to read internals, change data, or eat the
machine. ``PromptSandbox`` is Jinja2's ``ImmutableSandboxedEnvironment`` (no dunder or
underscore attributes, no mutation of lists and dicts) with ``StrictUndefined``, tightened
further:

- **Attributes and calls.** On plain data (str, numbers, lists, tuples, dicts) only the
  read-only methods in ``SAFE_METHODS`` can be reached or called; ``str.format`` and
  ``format_map`` cannot be reached at all, however indirectly (CVE-2024-56326,
  CVE-2025-27516); classes cannot be called. The ``attr``, ``xmlattr`` and ``urlize``
  filters are removed (CVE-2025-27516, CVE-2024-22195, CVE-2024-34064), and so are the
  ``namespace``, ``cycler``, ``joiner``, ``lipsum`` and ``dict`` globals.
- **Sizes.** No value a template builds may exceed ``MAX_VALUE_SIZE`` (characters of text
  plus items of containers, counted through nesting), checked *before* the work for every
  operation that can amplify (``*``, ``**``, ``%``, ``~``, joins, replaces, padding, indents,
  wraps, buffers of macros and blocks) and after every other operation; ``range`` is
  limited to ``MAX_RANGE`` items, integers to ``MAX_INT_BITS`` bits, nesting to
  ``MAX_DEPTH`` levels.
- **Printing.** Only plain data can become text, so no object repr (and no memory
  address) ever reaches a prompt.

Every refusal is a ``jinja2.exceptions.SecurityError`` whose message names what was
refused and never includes an object's repr; ``prompts.render`` turns it into a
``PromptRenderError``. Time and output limits are applied by ``prompts.render``.
"""

from __future__ import annotations

import re
import threading
import time
import types
from collections.abc import Callable, Generator, Iterable, Iterator, Mapping
from contextlib import contextmanager
from functools import update_wrapper
from itertools import islice
from typing import Any

from jinja2 import StrictUndefined, Undefined, nodes
from jinja2.compiler import CodeGenerator, Frame
from jinja2.exceptions import SecurityError
from jinja2.runtime import LoopContext, Macro
from jinja2.sandbox import ImmutableSandboxedEnvironment
from jinja2.utils import _PassArg

MAX_VALUE_SIZE = 100_000
"""Largest value a template may build: characters of text plus items of containers."""
MAX_RANGE = 10_000
"""Most items ``range()`` may produce."""
MAX_INT_BITS = 4_096
"""Largest integer a template may build (bits; about 1,233 decimal digits)."""
MAX_DEPTH = 32
"""Deepest nesting of lists and dicts a template may use."""
MAX_JSON_INDENT = 8
"""Largest ``tojson(indent)``."""

_SCALARS = (str, bytes, int, float, bool, type(None))
_CONTAINERS = (list, tuple, dict, set, frozenset)

SAFE_METHODS: dict[type, frozenset[str]] = {
    str: frozenset(
        {
            "capitalize",
            "casefold",
            "center",
            "count",
            "endswith",
            "find",
            "index",
            "isalnum",
            "isalpha",
            "isdecimal",
            "isdigit",
            "islower",
            "isnumeric",
            "isspace",
            "istitle",
            "isupper",
            "join",
            "ljust",
            "lower",
            "lstrip",
            "partition",
            "removeprefix",
            "removesuffix",
            "replace",
            "rfind",
            "rindex",
            "rjust",
            "rpartition",
            "rsplit",
            "rstrip",
            "split",
            "splitlines",
            "startswith",
            "strip",
            "swapcase",
            "title",
            "upper",
            "zfill",
        }
    ),
    dict: frozenset({"get", "items", "keys", "values"}),
    list: frozenset({"count", "index"}),
    tuple: frozenset({"count", "index"}),
    float: frozenset({"is_integer"}),
}
"""Methods of plain data a template may use; every other attribute of such a value is refused.
(Read-only methods only: no ``format``, ``format_map``, ``encode``, ``translate``,
``expandtabs``, ``maketrans``, ``fromkeys``, ``to_bytes``...)"""

_DATA_TYPES = (bool, int, float, complex, str, bytes, bytearray, list, tuple, dict, set, frozenset, range)

REMOVED_FILTERS = frozenset({"attr", "xmlattr", "urlize"})
"""Filters a prompt never needs and that have been sandbox or injection vectors."""

ITERABLE_FILTERS = frozenset(
    {
        "batch",
        "count",
        "d",
        "default",
        "dictsort",
        "first",
        "groupby",
        "items",
        "join",
        "last",
        "length",
        "list",
        "map",
        "max",
        "min",
        "random",
        "reject",
        "rejectattr",
        "reverse",
        "select",
        "selectattr",
        "slice",
        "sort",
        "sum",
        "unique",
    }
)
"""Filters that may take an iterator (the output of ``map``, ``select``...); every other
filter turns its input into text, so it must be plain data."""

_PRINTF_SPEC = re.compile(r"%(?:\([^)]*\))?[#0\- +]*(\*|\d+)?(?:\.(\*|\d+))?[hlL]?([diouxXeEfFgGcrsa%])")
_HIDDEN_ARGS = frozenset({"caller", "_loop_vars", "_block_vars"})
_SIZING_FILTERS = frozenset({"batch", "center", "indent", "slice", "truncate", "wordwrap"})
_SIZING_METHODS = frozenset({"center", "ljust", "rjust", "zfill"})


class SandboxLimitError(SecurityError):
    """A template tried to build something larger than the sandbox allows."""


def too_large(what: str = "a value") -> SandboxLimitError:
    return SandboxLimitError(f"{what} would be larger than {MAX_VALUE_SIZE:,} characters or items")


def measure(value: Any, *, printable: bool = False, limit: int = MAX_VALUE_SIZE) -> int:
    """Size of ``value``: characters of text plus items of containers, through nesting.

    Raises SecurityError when the size exceeds ``limit`` (the walk stops there), when
    nesting is deeper than MAX_DEPTH, or, with ``printable``, when ``value`` holds anything
    but plain data (such objects would print as reprs). An undefined value inside a
    container raises its UndefinedError.
    """
    kind = type(value)
    if kind is str:
        if len(value) > limit:
            raise too_large()
        return len(value)
    if kind is int or kind is float or kind is bool:
        return 1
    total = 0
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, str | bytes):
            total += len(item)
        elif isinstance(item, _SCALARS):
            total += 1
        elif isinstance(item, Undefined):
            if depth:
                str(item)  # a StrictUndefined raises UndefinedError naming the variable
        elif isinstance(item, _CONTAINERS):
            if depth >= MAX_DEPTH:
                raise SandboxLimitError(f"values may nest at most {MAX_DEPTH} levels deep")
            total += len(item)
            if total > limit:
                break
            children = [*item.keys(), *item.values()] if isinstance(item, dict) else item
            stack.extend((child, depth + 1) for child in children)
        elif printable:
            raise SecurityError(
                f"only text, numbers, lists and dicts can be printed, not {_kind(item)}"
                " (use |list or |join for sequences)"
            )
        else:
            total += 1
        if total > limit:
            raise too_large()
    if total > limit:
        raise too_large()
    return total


def _kind(value: Any) -> str:
    if isinstance(value, LoopContext):
        return "a loop"
    if isinstance(value, Macro):
        return "a macro"
    if isinstance(value, range):
        return "a range"
    if isinstance(value, Iterator):
        return "a generator"
    return "a function" if callable(value) else "an object"


def _materialize(iterable: Any, what: str) -> list[Any]:
    """Up to MAX_VALUE_SIZE items of ``iterable`` as a list (SecurityError past that)."""
    items = list(islice(iter(iterable), MAX_VALUE_SIZE + 1))
    if len(items) > MAX_VALUE_SIZE:
        raise too_large(what)
    return items


def _check_int(value: Any) -> None:
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > MAX_INT_BITS:
        raise SandboxLimitError(f"integers are limited to {MAX_INT_BITS} bits")


def _check_argument(value: Any, *, sizes_output: bool = False) -> None:
    """An argument to a filter or method: data within limits; a number that sizes the
    output (a width, a count) at most MAX_VALUE_SIZE."""
    if sizes_output and isinstance(value, int) and not isinstance(value, bool) and abs(value) > MAX_VALUE_SIZE:
        raise SandboxLimitError(f"widths and counts are limited to {MAX_VALUE_SIZE:,}")
    if isinstance(value, (*_CONTAINERS, str)):
        measure(value)


def check_printf(fmt: Any, args: Any = ()) -> None:
    """Refuse a printf-style format whose widths/precisions could build an oversized string."""
    if not isinstance(fmt, str):
        return
    budget = len(fmt)
    for match in _PRINTF_SPEC.finditer(fmt):
        width, precision, _conversion = match.groups()
        if "*" in (width, precision):
            raise SandboxLimitError("'*' widths are not allowed in format strings")
        budget += int(width or 0) + int(precision or 0)
    if budget > MAX_VALUE_SIZE:
        raise too_large("the formatted text")
    measure(args, printable=True)


def check_join(separator: str, items: list[Any]) -> None:
    total = sum(measure(item, printable=True) for item in items)
    if total + len(separator) * max(len(items) - 1, 0) > MAX_VALUE_SIZE:
        raise too_large("the joined text")


def check_replace(text: str, old: Any, new: Any, count: Any = -1) -> None:
    text, old, new = str(text), str(old), str(new)
    occurrences = text.count(old)
    if isinstance(count, int) and count >= 0:
        occurrences = min(occurrences, count)
    if len(text) + occurrences * max(len(new) - len(old), 0) > MAX_VALUE_SIZE:
        raise too_large("the replaced text")


# ---------------------------------------------------------------------------- time limit
class RenderTimeout(BaseException):
    """Raised inside a render that ran past its deadline."""


_clock = threading.local()


@contextmanager
def deadline(seconds: float) -> Generator[None, None, None]:
    """Give renders in this thread ``seconds`` (wall clock) from now; nested calls keep the
    earlier deadline."""
    previous = getattr(_clock, "deadline", None)
    limit = time.perf_counter() + seconds
    _clock.deadline = limit if previous is None else min(previous, limit)
    try:
        yield
    finally:
        _clock.deadline = previous


def check_deadline() -> None:
    """RenderTimeout when this thread's render is past its deadline. Templates call it on
    every loop iteration and every call (macros, ``loop()``, methods), which are the only
    ways a template can run long, so no tracing hook is needed."""
    limit = getattr(_clock, "deadline", None)
    if limit is not None and time.perf_counter() > limit:
        raise RenderTimeout


def guard_loops(ast: nodes.Template) -> nodes.Template:
    """Make every ``{% for %}`` of ``ast`` iterate through ``PromptSandbox.guarded_iter``,
    which checks the deadline on each iteration."""
    for loop in ast.find_all(nodes.For):
        guard = nodes.EnvironmentAttribute("guarded_iter", lineno=loop.iter.lineno)
        loop.iter = nodes.Call(guard, [loop.iter], [], None, None, lineno=loop.iter.lineno)
        if ast.environment is not None:
            loop.iter.set_environment(ast.environment)
    return ast


class _GuardedCodeGenerator(CodeGenerator):
    """Compiles ``a ~ b`` to a size-checked concatenation (Jinja's own is unchecked)."""

    def visit_Concat(self, node: nodes.Concat, frame: Frame) -> None:
        self.write("environment.checked_concat((")
        for arg in node.nodes:
            self.visit(arg, frame)
            self.write(", ")
        self.write("))")


class PromptSandbox(ImmutableSandboxedEnvironment):
    """The environment every prompt template is compiled and rendered with; see module doc."""

    code_generator_class = _GuardedCodeGenerator
    intercepted_binops = frozenset({"+", "-", "*", "/", "//", "%", "**"})

    def __init__(self) -> None:
        super().__init__(
            undefined=StrictUndefined,
            autoescape=False,
            keep_trailing_newline=True,
            finalize=self._finalize,
        )
        self.globals = {"range": self._range}
        for name in REMOVED_FILTERS:
            self.filters.pop(name, None)
        self.filters = {name: self._guard_filter(name, f) for name, f in self.filters.items()}

    # -- attributes and calls ------------------------------------------------
    def is_safe_attribute(self, obj: Any, attr: str, value: Any) -> bool:
        if not super().is_safe_attribute(obj, attr, value):
            return False
        if isinstance(obj, _DATA_TYPES):
            allowed = next((names for kind, names in SAFE_METHODS.items() if isinstance(obj, kind)), frozenset())
            return attr in allowed
        return not isinstance(value, type)

    def is_safe_callable(self, obj: Any) -> bool:
        if isinstance(obj, type):
            return False
        if isinstance(obj, types.BuiltinMethodType | types.MethodWrapperType):
            owner = getattr(obj, "__self__", None)
            if isinstance(owner, types.ModuleType) or owner is None:
                return False
            return self.is_safe_attribute(owner, obj.__name__, obj)
        return super().is_safe_callable(obj)

    def getattr(self, obj: Any, attribute: str) -> Any:
        # A dict key that happens to share a method's name (``output.format``) is the key.
        if isinstance(obj, dict) and attribute in obj and attribute not in SAFE_METHODS[dict]:
            return obj[attribute]
        return super().getattr(obj, attribute)

    def wrap_str_format(self, value: Any) -> Callable[..., str] | None:
        if super().wrap_str_format(value) is not None:
            raise SecurityError("str.format is not available in prompt templates; use ~ or the format filter")
        return None

    def unsafe_undefined(self, obj: Any, attribute: str) -> Undefined:
        return self.undefined(
            f"access to attribute {attribute!r} is not allowed in prompt templates",
            name=attribute,
            obj=obj,
            exc=SecurityError,
        )

    def call(__self, __context: Any, __obj: Any, *args: Any, **kwargs: Any) -> Any:  # Jinja's signature
        check_deadline()
        if not __self.is_safe_callable(__obj):
            raise SecurityError("this object cannot be called in prompt templates")
        owner = getattr(__obj, "__self__", None)
        sizes_output = isinstance(owner, str) and getattr(__obj, "__name__", "") in _SIZING_METHODS
        for value in (*args, *(v for k, v in kwargs.items() if k not in _HIDDEN_ARGS)):
            _check_argument(value, sizes_output=sizes_output)
        if isinstance(owner, str):
            name = __obj.__name__
            if name == "join" and args:
                items = _materialize(args[0], "the joined text")
                check_join(owner, items)
                args = (items, *args[1:])
            elif name == "replace" and len(args) >= 2:
                check_replace(owner, args[0], args[1], args[2] if len(args) > 2 else kwargs.get("count", -1))
        result = __context.call(__obj, *args, **kwargs)
        measure(result)
        return result

    # -- operators -----------------------------------------------------------
    def call_binop(self, context: Any, operator: str, left: Any, right: Any) -> Any:
        if operator == "*":
            for seq, count in ((left, right), (right, left)):
                if isinstance(seq, str | bytes | list | tuple) and isinstance(count, int):
                    if measure(seq) * max(count, 0) > MAX_VALUE_SIZE:
                        raise too_large()
            if isinstance(left, int) and isinstance(right, int):
                if left.bit_length() + right.bit_length() > MAX_INT_BITS:
                    raise SandboxLimitError(f"integers are limited to {MAX_INT_BITS} bits")
        elif operator == "**":
            if isinstance(left, int) and isinstance(right, int) and right > 0:
                if max(left.bit_length(), 1) * right > MAX_INT_BITS:
                    raise SandboxLimitError(f"integers are limited to {MAX_INT_BITS} bits")
        elif operator == "%" and isinstance(left, str):
            check_printf(left, right)
        elif operator == "+":
            for side in (left, right):
                measure(side)
        result = self.binop_table[operator](left, right)
        _check_int(result)
        measure(result)
        return result

    @staticmethod
    def guarded_iter(iterable: Any) -> Iterator[Any]:
        """The items of a ``{% for %}`` loop, checking the render deadline before each."""
        for item in iterable:
            check_deadline()
            yield item

    def checked_concat(self, values: Iterable[Any]) -> str:
        """``a ~ b ~ ...``: each part must be printable data; the result within limits."""
        parts = []
        total = 0
        for value in values:
            if isinstance(value, Undefined):
                parts.append(str(value))  # StrictUndefined raises, naming the variable
                continue
            measure(value, printable=True)
            text = value if isinstance(value, str) else str(value)
            total += len(text)
            if total > MAX_VALUE_SIZE:
                raise too_large("the concatenated text")
            parts.append(text)
        return "".join(parts)

    def concat(self, parts: Iterable[str]) -> str:
        """Buffers of macros, ``{% set %}`` blocks, ``{% filter %}`` and ``caller()``."""
        chunks = []
        total = 0
        for part in parts:
            total += len(part)
            if total > MAX_VALUE_SIZE:
                raise too_large("the text of a macro or block")
            chunks.append(part)
        return "".join(chunks)

    def _finalize(self, value: Any) -> Any:
        """Every ``{{ expression }}``: only plain data within limits is printed."""
        if not isinstance(value, Undefined):
            measure(value, printable=True)
        return value

    @staticmethod
    def _range(*args: int) -> range:
        for arg in args:
            _check_int(arg)
        numbers = range(*args)
        try:
            size = len(numbers)
        except OverflowError:
            size = MAX_RANGE + 1
        if size > MAX_RANGE:
            raise SandboxLimitError(f"range() is limited to {MAX_RANGE:,} items")
        return numbers

    # -- filters -------------------------------------------------------------
    def _guard_filter(self, name: str, original: Callable[..., Any]) -> Callable[..., Any]:
        """Wrap a built-in filter: check its input and arguments first, its result after."""
        pass_arg = _PassArg.from_obj(original)
        skip = 1 if pass_arg is not None else 0
        takes_iterators = name in ITERABLE_FILTERS
        sizes_output = name in _SIZING_FILTERS
        precheck = _FILTER_CHECKS.get(name)

        def guarded(*args: Any, **kwargs: Any) -> Any:
            value, rest = args[skip], args[skip + 1 :]
            if not isinstance(value, Undefined):
                if takes_iterators and not isinstance(value, (*_SCALARS, *_CONTAINERS)):
                    if name == "join":
                        value = _materialize(value, "the joined text")
                        args = (*args[:skip], value, *rest)
                else:
                    measure(value, printable=not takes_iterators)
            for argument in (*rest, *kwargs.values()):
                _check_argument(argument, sizes_output=sizes_output)
            if precheck is not None and not isinstance(value, Undefined):
                precheck(value, *rest, **kwargs)
            result = original(*args, **kwargs)
            if isinstance(result, (*_SCALARS, *_CONTAINERS)):
                measure(result)
            return result

        return update_wrapper(guarded, original)


def _join_check(value: Any, d: Any = "", attribute: Any = None, **__: Any) -> None:
    check_join(str(d), list(value) if isinstance(value, (*_CONTAINERS, str)) else [value])


def _indent_check(text: Any, width: Any = 4, *_: Any, **__: Any) -> None:
    text = str(text)
    pad = width if isinstance(width, int) else len(str(width))
    if len(text) + (text.count("\n") + 1) * max(pad, 0) > MAX_VALUE_SIZE:
        raise too_large("the indented text")


def _wordwrap_check(
    text: Any, width: Any = 79, break_long_words: Any = True, wrapstring: Any = None, *_: Any, **__: Any
) -> None:
    text = str(text)
    width = width if isinstance(width, int) and width > 0 else 1
    lines = len(text) // width + text.count("\n") + 1
    if len(text) + lines * len(str(wrapstring or "\n")) > MAX_VALUE_SIZE:
        raise too_large("the wrapped text")


def _replace_check(text: Any, old: Any, new: Any, count: Any = None, **__: Any) -> None:
    check_replace(text, old, new, -1 if count is None else count)


def _format_check(fmt: Any, *args: Any, **kwargs: Any) -> None:
    check_printf(fmt, kwargs or args)


def _sum_check(iterable: Any, attribute: Any = None, start: Any = 0, **__: Any) -> None:
    if not isinstance(start, int | float) or isinstance(start, bool):
        raise SecurityError("sum() adds numbers only")


def _tojson_check(value: Any, indent: Any = None, **__: Any) -> None:
    if indent is not None and not (isinstance(indent, int) and 0 <= indent <= MAX_JSON_INDENT):
        raise SandboxLimitError(f"tojson indent must be between 0 and {MAX_JSON_INDENT}")
    if indent and measure(value) * (indent * MAX_DEPTH + 1) > MAX_VALUE_SIZE * MAX_JSON_INDENT:
        raise too_large("the JSON text")


_FILTER_CHECKS: Mapping[str, Callable[..., None]] = {
    "join": _join_check,
    "indent": _indent_check,
    "wordwrap": _wordwrap_check,
    "replace": _replace_check,
    "format": _format_check,
    "sum": _sum_check,
    "tojson": _tojson_check,
}
"""Checks run before the filters that can build much more than they are given."""
