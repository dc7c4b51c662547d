"""The documentation site's build-time code: MkDocs hooks and a griffe extension (not a page).

* ``on_page_markdown`` (an MkDocs hook, ``hooks:`` in ``mkdocs.yml``): a page line
  ``<!-- reference: NAME -->`` is replaced by
  :func:`sourcebias.cli.reference.reference_markdown` ``(NAME)`` (the CLI from the typer app, the
  measures, statistics, retrieval kinds, detectors and presets from their registries), so the reference pages
  cannot drift from the code.
* ``SphinxRoles`` (a griffe extension, ``extensions:`` of mkdocstrings in ``mkdocs.yml``): the
  package's docstrings cross-reference with Sphinx roles (``:class:`~sourcebias.x.Name```), which
  read well in ``help()`` and in an editor, but mkdocstrings renders google-style docstrings as
  Markdown, where a role is plain text. The extension rewrites each role, before the docstrings
  are parsed, into the cross-reference mkdocstrings itself writes for signatures: an *optional*
  autorefs link (``<autoref identifier=... optional>``), a link where the target is on the site,
  the name in code where it is not (a strict build does not fail on a private helper it does not
  render). Written by hand: no griffe extension reads Sphinx roles inside google-style docstrings
  (griffe's Sphinx parser reads ``:param:`` fields, not inline roles).

The file is excluded from the published site (``exclude_docs`` in ``mkdocs.yml``).
"""

from __future__ import annotations

import contextlib
import re
from typing import Any

from griffe import AliasResolutionError, CyclicAliasError, Extension, NameResolutionError, Object

MARKER = re.compile(r"^<!-- reference: ([a-z-]+) -->$", re.M)

# A Sphinx cross-reference role of the Python domain: :class:`~a.b.C`, :meth:`Title <a.b.C.m>`.
ROLE = re.compile(r":(?:py:)?(?:class|mod|func|meth|attr|data|exc|obj|const|type):`(?P<target>[^`]+)`")
_TITLED = re.compile(r"^(?P<title>.*?)\s*<(?P<target>[^<>]+)>$")


def on_page_markdown(markdown: str, page, config, files) -> str:
    """Replace each reference marker with the generated Markdown."""
    if "<!-- reference:" not in markdown:
        return markdown
    from sourcebias.cli.reference import reference_markdown

    return MARKER.sub(lambda m: reference_markdown(m.group(1)), markdown)


def _relative_module(obj: Object, target: str) -> str:
    """``.name`` (``..name``) as a relative import in ``obj``'s module would read it."""
    dots = len(target) - len(target.lstrip("."))
    base = obj.module if obj.module.is_init_module else obj.module.parent
    for _ in range(dots - 1):
        base = base.parent if base is not None else None
    return f"{base.path}.{target[dots:]}" if base is not None else target[dots:]


def _candidates(obj: Object, target: str) -> list[str]:
    paths = []
    if target.startswith("."):  # a sibling module (``.results``), else searched like a plain name
        paths.append(_relative_module(obj, target))
        target = target.lstrip(".")
    first, _, rest = target.partition(".")
    with contextlib.suppress(NameResolutionError):  # not in scope: the target as written
        paths.append(obj.resolve(first) + (f".{rest}" if rest else ""))
    return [*paths, target]


def resolve_target(obj: Object, target: str) -> str:
    """The dotted path a role's target names, seen from ``obj`` (Sphinx's lookup, simplified): a
    relative module (``.results``), a name in scope of the object, its class or its module
    (imports included), else the target as written; the first that names a loaded object wins,
    and a re-export resolves to where the object is defined (the path the site's anchors use)."""
    paths = _candidates(obj, target)
    for path in paths:
        try:
            return str(obj.modules_collection.get_member(path).canonical_path)
        except (KeyError, AliasResolutionError, CyclicAliasError, ValueError):
            continue
    return paths[0]


def roles_to_autorefs(obj: Object, text: str) -> str:
    """``text`` with every Sphinx role replaced by an optional autorefs cross-reference.

    The shown name follows Sphinx: ``~`` shows the last component, ``Title <target>`` the title,
    otherwise the target as written; it is a Markdown code span (``_`` and ``*`` stay literal).
    """

    def replace(match: re.Match[str]) -> str:
        target = match["target"].strip()
        titled = _TITLED.match(target)
        title = titled["title"] if titled else None
        target = titled["target"] if titled else target
        short = target.startswith("~")
        target = target.lstrip("~!")
        shown = title or (target.rsplit(".", 1)[-1] if short else target.lstrip("."))
        return f'<autoref identifier="{resolve_target(obj, target)}" optional>`{shown}`</autoref>'

    return ROLE.sub(replace, text)


def _rewrite(obj: Object) -> None:
    if obj.docstring is not None and ":`" in obj.docstring.value:
        obj.docstring.value = roles_to_autorefs(obj, obj.docstring.value)
    for member in obj.members.values():
        if not member.is_alias:
            _rewrite(member)


class SphinxRoles(Extension):
    """Griffe extension: Sphinx roles in docstrings become autorefs cross-references."""

    def on_package(self, *, pkg: Object, **kwargs: Any) -> None:
        """Rewrite every docstring of the loaded package, before any is parsed."""
        _rewrite(pkg)
