"""Hostile prompt templates: published Jinja2 sandbox escapes (2024-2025), access to
internals, and resource exhaustion. Each entry is ``(id, template, kinds it may be refused as)``."""

from __future__ import annotations

SECURITY = ("security",)
LIMIT = ("limit",)
SYNTAX = ("syntax",)

HOSTILE: list[tuple[str, str, tuple[str, ...]]] = [
    # -- internals through dunder and underscore attributes
    ("mro_subclasses", "{{ ''.__class__.__mro__[1].__subclasses__() }}", SECURITY),
    ("getitem_dunder", "{{ ''['__class__'] }}", SECURITY),
    ("dunder_built_at_runtime", "{% set a = '__cla' ~ 'ss__' %}{{ ''[a] }}", SECURITY),
    ("dunder_through_map", "{{ ['x']|map(attribute='__class__')|list }}", SECURITY),
    ("self_globals", "{{ self.__init__.__globals__ }}", SECURITY),
    ("template_reference_context", "{{ self._TemplateReference__context }}", SECURITY),
    ("range_globals", "{{ range.__globals__ }}", SECURITY),
    ("cycler_popen", "{{ cycler.__init__.__globals__.os.popen('id').read() }}", SECURITY),
    ("loop_class", "{% for x in [1] %}{{ loop.__class__.__base__ }}{% endfor %}", SECURITY),
    # -- str.format family: CVE-2024-56326 (indirect reference), CVE-2025-27516 (|attr)
    ("format_method", "{{ '{0.__class__}'.format(1) }}", SECURITY),
    ("format_map_method", "{{ '{x.__class__}'.format_map({'x': 1}) }}", SECURITY),
    ("format_stored_then_called", "{% set f = '{0.__init__.__globals__}'.format %}{{ f(self) }}", SECURITY),
    ("format_through_getitem", "{{ ''['format'] }}", SECURITY),
    ("format_through_map", "{{ ['{0.__class__}']|map(attribute='format')|first }}", SECURITY),
    ("attr_filter_format", "{{ ('{0.__class__}'|attr('format'))(1) }}", SYNTAX),
    ("attr_filter_dunder", "{{ ''|attr('__class__') }}", SYNTAX),
    # -- CVE-2024-22195 / CVE-2024-34064: xmlattr keys that inject attributes
    ("xmlattr_injection", "<a {{ {'onclick=alert(1) x': 1}|xmlattr }}>", SYNTAX),
    ("xmlattr_in_dead_branch", "{% if false %}{{ {}|xmlattr }}{% endif %}", SYNTAX),
    # -- CVE-2024-56201 reached the compiler through template names: no template loads another
    ("include", "{% include '/etc/passwd' %}", SECURITY),
    ("import", "{% import 'macros.html' as m %}", SECURITY),
    ("from_import", "{% from 'x' import y %}", SECURITY),
    ("extends", "{% extends 'base.html' %}", SECURITY),
    # -- methods that mutate or build bytes and tables
    ("list_append", "{% set l = [] %}{{ l.append(1) }}", SECURITY),
    ("dict_update", "{% set d = {} %}{{ d.update({'a': 1}) }}", SECURITY),
    ("translate_amplifier", "{{ ('a' * 1000).translate({97: 'b' * 100000}) }}", SECURITY),
    ("expandtabs_amplifier", "{{ ('\t' * 1000).expandtabs(100000) }}", SECURITY),
    ("int_to_bytes", "{{ (1).to_bytes(100000, 'big') }}", SECURITY),
    ("str_encode", "{{ 'x'.encode('utf-8') }}", SECURITY),
    ("sum_of_lists", "{{ ([[1]] * 20000)|sum(start=[]) }}", SECURITY),
    # -- huge strings and values
    ("string_times_billion", "{{ 'a' * 1000000000 }}", LIMIT),
    ("list_times_billion", "{{ [1] * 1000000000 }}", LIMIT),
    ("repeated_references", "{% set s = 'a' * 100000 %}{{ [s] * 1000 }}", LIMIT),
    ("join_of_references", "{% set s = 'a' * 50000 %}{{ ([s] * 100)|join }}", LIMIT),
    ("join_with_huge_separator", "{{ ('a' * 50000)|join('b' * 50000) }}", LIMIT),
    ("str_join_method", "{{ ('b' * 50000).join('a' * 50000) }}", LIMIT),
    ("replace_empty_needle", "{{ ('a' * 1000)|replace('', 'b' * 1000) }}", LIMIT),
    ("str_replace_method", "{{ ('a' * 1000).replace('', 'b' * 1000) }}", LIMIT),
    ("printf_width", "{{ '%0999999999d' % 1 }}", LIMIT),
    ("printf_star_width", "{{ '%*d' % (999999999, 1) }}", LIMIT),
    ("format_filter_width", "{{ '%0999999999d'|format(1) }}", LIMIT),
    ("center_width", "{{ 'a'|center(1000000000) }}", LIMIT),
    ("ljust_width", "{{ 'a'.ljust(1000000000) }}", LIMIT),
    ("indent_amplifier", "{{ ('x\n' * 50000)|indent('y' * 1000) }}", LIMIT),
    ("wordwrap_amplifier", "{{ ('a' * 50000)|wordwrap(1, wrapstring='b' * 1000) }}", LIMIT),
    ("tojson_indent", "{{ [1, [2, [3]]]|tojson(100000) }}", LIMIT),
    ("power", "{{ 10 ** 100000 }}", LIMIT),
    ("power_tower", "{% set x = 9 ** 100 %}{{ x ** 100 }}", LIMIT),
    ("big_int_square", "{% set x = 2 ** 4000 %}{{ x * x }}", LIMIT),
    (
        "concat_doubling",
        "{% macro d(s, n) %}{% if n %}{{ d(s ~ s, n - 1) }}{% endif %}{% endmacro %}{{ d('a', 64) }}",
        LIMIT,
    ),
    (
        "macro_buffer",
        "{% macro m() %}{% for i in range(10000) %}{{ 'a' * 1000 }}{% endfor %}{% endmacro %}{% set y = m() %}",
        LIMIT,
    ),
    (
        "set_block_buffer",
        "{% set y %}{% for i in range(10000) %}{{ 'a' * 1000 }}{% endfor %}{% endset %}{{ y|length }}",
        LIMIT,
    ),
    ("output_flood", "{% for i in range(10000) %}{{ 'a' * 100 }}{% endfor %}", LIMIT),
    # -- huge loops and deep recursion
    ("range_ten_billion", "{% for i in range(10 ** 10) %}{% endfor %}", LIMIT),
    ("nested_loops", "{% for a in range(10000) %}{% for b in range(10000) %}{% endfor %}{% endfor %}", LIMIT),
    (
        "exponential_macro",
        "{% macro f(n) %}{% if n %}{{ f(n - 1) }}{{ f(n - 1) }}{% endif %}{% endmacro %}{{ f(60) }}",
        LIMIT,
    ),
    ("infinite_recursion", "{% macro r(n) %}{{ r(n + 1) }}{% endmacro %}{{ r(0) }}", LIMIT),
    ("deeply_nested_expression", "{{ " + "(" * 5000 + "1" + ")" * 5000 + " }}", LIMIT),
    ("deeply_nested_list", "{{ " + "[" * 2000 + "]" * 2000 + " }}", LIMIT),
]

LEAK_MARKERS = (
    "Traceback",
    'File "',
    "site-packages",
    "jinja2.",
    "<class",
    "<function",
    "<module",
    "<built-in",
    " object at ",
    "0x",
    "__globals__':",
    "popen",
    "uid=",
)
"""Text that would mean internals leaked into an error message."""
