"""The command line around Hydra: the checks made before Hydra starts, and Hydra's own config
errors turned into fairsim's one-line format.

Config folders: Hydra finds a preset (``cluster=mine``) in the first folder of its search path
that has ``cluster/mine.yaml``: ``conf/`` (or ``--config-path``), the folders of any installed
``SearchPathPlugin``, a ``--config-dir`` folder, then each ``hydra.searchpath`` entry (from the
command line, else from the primary config, conf/config.yaml). ``config_folders`` lists the same
folders in the same order (``file://`` and plain paths, ``pkg://`` packages), and
``check_group_choices`` refuses a ``group=choice`` override that names no preset in any of them,
listing the folders and every preset found, or a choice that two folders hold in different
versions (Hydra would take the first one silently).

Hydra's errors: ``config_errors_in_one_line`` (around ``main()`` in run.py) has Hydra raise its
composition errors (the documented ``HYDRA_FULL_ERROR=1``) and prints each as one line, exit 2: a
mistyped key (``sim.round_len=60``) or group (``polcy=ours``) names the closest valid ones.
``hydra_reports_errors`` hands reporting back to Hydra as a run starts, so an error inside a run
is reported as before. A ``HYDRA_FULL_ERROR=1`` of the user's own leaves Hydra's report alone.
"""

from __future__ import annotations

import difflib
import importlib.resources
import os
import re
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from importlib.resources.abc import Traversable
from pathlib import Path
from typing import Any

from fairsim.errors import InputError

SOURCE = "command line"
FULL_ERROR = "HYDRA_FULL_ERROR"
_FLAGS = {
    "--config-dir": "config_dir",
    "-cd": "config_dir",
    "--config-path": "config_path",
    "-cp": "config_path",
    "--config-name": "config_name",
    "-cn": "config_name",
}


@dataclass(frozen=True)
class Folder:
    """One folder of Hydra's search path: ``label`` as it is shown (``conf``, ``/home/me/myconf``,
    ``pkg://mypkg.conf``) and ``root`` to read it (a Path, or a package's resources)."""

    label: str
    root: Traversable

    def shown(self, group: str) -> str:
        return f"{self.label}/{group}/"


@dataclass
class CommandLine:
    overrides: list[str]
    config_dir: str | None = None
    config_path: str | None = None
    config_name: str | None = None


def split_command_line(argv: Sequence[str]) -> CommandLine:
    """The overrides and the config-folder flags of ``python run.py`` (as Hydra's parser reads
    them: ``--config-dir DIR``, ``--config-dir=DIR``, ``-cd DIR``, long names abbreviated)."""
    out = CommandLine([])
    args = iter(argv)
    for arg in args:
        if not arg.startswith("-"):
            out.overrides.append(arg)
            continue
        name, eq, value = arg.partition("=")
        if name.startswith("--config-") and name not in _FLAGS:  # argparse takes a unique prefix
            name = next((f for f in _FLAGS if f.startswith(name) and len(name) > len("--config-")), name)
        if name in _FLAGS:
            setattr(out, _FLAGS[name], value if eq else next(args, None))
    return out


def _parse(arg: str) -> Any:
    """Hydra's parse of one override, or None if it does not parse (Hydra reports that)."""
    from hydra.core.override_parser.overrides_parser import OverridesParser
    from hydra.errors import HydraException

    try:
        return OverridesParser.create().parse_overrides([arg])[0]
    except HydraException:
        return None


def folder(entry: str, source: str, field: str, base: Path | None = None) -> Folder:
    """The folder of one search-path entry: ``file://DIR``, a plain path (relative to ``base``,
    else the working directory, as Hydra reads it) or ``pkg://package``; anything else, a folder
    that is not there or a package that does not import is refused."""
    scheme, sep, rest = entry.partition("://")
    if not sep:
        scheme, rest = "file", entry
    if scheme == "file":
        path = Path(rest)  # no ~ expansion: Hydra does none
        path = (base / path if base is not None and not path.is_absolute() else path).resolve()
        if not path.is_dir():
            raise InputError(source, field, f"no folder {entry!r} ({path} is not a folder)")
        return Folder(str(path), path)
    if scheme == "pkg":
        module = rest.replace("/", ".").rstrip(".")
        try:
            root = importlib.resources.files(module)
        except (ImportError, TypeError) as exc:
            raise InputError(
                source, field, f"{entry!r}: no importable package {module!r} ({type(exc).__name__})"
            ) from None
        return Folder(f"pkg://{module}", root)
    raise InputError(
        source,
        field,
        f"{entry!r}: {scheme}:// is not supported here (allowed: file://DIR, pkg://package or a plain path)",
    )


class _Recorder:
    """What a ``SearchPathPlugin`` adds to the search path, in Hydra's order."""

    def __init__(self, main: str) -> None:
        from hydra.core.config_search_path import SearchPathElement

        self.elements = [SearchPathElement("hydra", "pkg://hydra.conf"), SearchPathElement("main", main)]

    def get_path(self) -> list:
        return self.elements

    def _at(self, anchor: Any, after: bool) -> int:
        if anchor is None:
            return len(self.elements) if after else 0
        provider, path = (None, anchor) if isinstance(anchor, str) else (anchor.provider, anchor.path)
        found = [i for i, e in enumerate(self.elements) if provider in (None, e.provider) and path in (None, e.path)]
        if not found:
            return len(self.elements) if after else 0
        return found[-1] + 1 if after else found[0]

    def append(self, provider: str, path: str, anchor: Any = None) -> None:
        from hydra.core.config_search_path import SearchPathElement

        self.elements.insert(self._at(anchor, True), SearchPathElement(provider, path))

    def prepend(self, provider: str, path: str, anchor: Any = None) -> None:
        from hydra.core.config_search_path import SearchPathElement

        self.elements.insert(self._at(anchor, False), SearchPathElement(provider, path))


def plugin_entries(main: str) -> list[tuple[str, str]]:
    """(plugin, path) for each folder the installed ``SearchPathPlugin``s add (Hydra discovers
    them in the ``hydra_plugins`` namespace package; the discovery is Hydra's own, done once)."""
    from hydra.core.plugins import Plugins
    from hydra.plugins.search_path_plugin import SearchPathPlugin

    recorder = _Recorder(main)
    for plugin in Plugins.instance().discover(SearchPathPlugin):
        plugin().manipulate_search_path(recorder)
    return [(e.provider, e.path) for e in recorder.elements if e.provider not in ("hydra", "main")]


def config_folders(argv: Sequence[str], conf_dir: Path, config_name: str = "config") -> list[Folder]:
    """The folders Hydra searches for presets, in its order (see the module's docstring)."""
    line = split_command_line(argv)
    app = conf_dir.parent  # run.py's folder: --config-path is relative to it
    if line.config_path is not None:
        main = folder(line.config_path, SOURCE, "--config-path", base=app)
    else:
        main = Folder(conf_dir.name, conf_dir)  # shown as conf/cluster/, relative to the repository
    folders = [main]
    main_entry = main.label if main.label.startswith("pkg://") else f"file://{main.root}"
    for plugin, entry in plugin_entries(main_entry):
        folders.append(folder(entry, f"SearchPathPlugin {plugin}", "path"))
    if line.config_dir is not None:
        folders.append(folder(line.config_dir, SOURCE, "--config-dir"))
    entries, source = searchpath_override(line.overrides), SOURCE
    if entries is None:
        name = f"{line.config_name or config_name}.yaml"
        entries, source = primary_searchpath(folders, name), f"{main.label}/{name}"
    folders += [folder(e, source, "hydra.searchpath") for e in entries]
    return folders


HYDRAS_OWN = "pkg://hydra.conf"  # Hydra's own configs, part of an installed distribution


def searched_folders(config_sources: Sequence[Any], hydras_own: bool = False) -> list[Folder]:
    """The folders of a composed config's ``hydra.runtime.config_sources``, in Hydra's order:
    the same folders as ``config_folders``, and Hydra's own first with ``hydras_own``.
    Structured configs have no folder, and a folder no longer there is left out."""
    out = []
    for source in config_sources:
        if source.schema in ("file", "pkg") and (hydras_own or f"{source.schema}://{source.path}" != HYDRAS_OWN):
            try:
                out.append(folder(f"{source.schema}://{source.path}", f"config source {source.provider}", "path"))
            except InputError:
                continue
    return out


def searchpath_override(overrides: Sequence[str]) -> list[str] | None:
    """The entries of ``hydra.searchpath=[...]`` on the command line (Hydra takes the plain form
    only, and this list replaces the primary config's); None if it is not there."""
    for arg in overrides:
        if arg.split("=", 1)[0].strip() != "hydra.searchpath":
            continue
        parsed = _parse(arg)
        value = parsed.value() if parsed is not None else None
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            return []  # Hydra refuses it ("hydra.searchpath must be a list of strings")
        return value
    return None


def primary_searchpath(folders: Sequence[Folder], name: str) -> list[str]:
    """``hydra.searchpath`` of the primary config, read from the first folder that has it."""
    from omegaconf import OmegaConf

    for f in folders:
        file = f.root / name
        if file.is_file():
            value = OmegaConf.select(OmegaConf.create(file.read_text()), "hydra.searchpath")
            return [str(v) for v in value] if value is not None else []
    return []


def group_options(folders: Sequence[Folder], group: str) -> list[str]:
    """Every preset of ``group`` (a folder name such as ``cluster`` or ``policy/mechanism``) in any folder."""
    return sorted(
        {
            p.name[:-5]
            for f in folders
            if (f.root / group).is_dir()
            for p in (f.root / group).iterdir()
            if p.name.endswith(".yaml") and p.is_file()
        }
    )


def group_names(folders: Sequence[Folder]) -> list[str]:
    """The config groups of the folders (subfolders, nested ones as ``policy/mechanism``), Hydra's own left out."""
    names: set[str] = set()

    def walk(node: Traversable, prefix: str) -> None:
        for child in node.iterdir():
            if child.is_dir() and not child.name.startswith(("_", ".")) and f"{prefix}{child.name}" != "hydra":
                names.add(f"{prefix}{child.name}")
                walk(child, f"{prefix}{child.name}/")

    for f in folders:
        walk(f.root, "")
    return sorted(names)


def _choices(parsed: Any) -> list[str]:
    """The preset names an override of a group asks for (each of a sweep, each of a list)."""
    from hydra.core.override_parser.types import ValueType

    if parsed.value_type in (ValueType.GLOB_CHOICE_SWEEP, ValueType.INTERVAL_SWEEP):
        return []
    values = list(parsed.sweep_string_iterator()) if parsed.is_sweep_override() else parsed.value()
    values = values if isinstance(values, list) else [values]
    return [str(v) for v in values if v is not None and "${" not in str(v)]


# Other names of a preset, in any case: the paper calls FFT what conf/ calls ``ours``. The command
# line is rewritten before Hydra reads it, so an alias composes exactly its preset's config (one
# cell, one folder, one MLflow run); a preset of that name in a folder of the user's own wins.
PRESET_ALIASES = {"policy": {"fft": "ours"}}


def check_group_choices(argv: list[str], conf_dir: Path, config_name: str = "config") -> list[str]:
    """``argv`` with preset aliases (``PRESET_ALIASES``) replaced by their presets' names; raise
    InputError for ``group=choice`` overrides (sweeps included) that name no preset in any config
    folder (naming the closest ones), or a preset two folders hold in different versions.
    Hydra's own groups (``hydra/launcher=...``, whose options plugins add) are left to Hydra."""
    folders = config_folders(argv, conf_dir, config_name)
    argv = [_unaliased(arg, folders) for arg in argv]
    for arg in split_command_line(argv).overrides:
        parsed = _parse(arg) if "=" in arg else None
        if parsed is None or parsed.is_delete() or parsed.is_hydra_override():
            continue
        group = parsed.key_or_group
        if "." in group or not any((f.root / group).is_dir() for f in folders):
            continue
        options = group_options(folders, group)
        for choice in _choices(parsed):
            if choice not in options:
                where = " or ".join(f.shown(group) for f in folders)
                raise InputError(
                    SOURCE,
                    group,
                    f"no preset {choice!r} in {where}{_closest(choice, options, case=True)} "
                    f"(allowed: {', '.join(options)})",
                )
            holders = [f for f in folders if (f.root / group / f"{choice}.yaml").is_file()]
            texts = {(f.root / group / f"{choice}.yaml").read_bytes() for f in holders}
            if len(texts) > 1:
                raise InputError(
                    SOURCE,
                    group,
                    f"preset {choice!r} is in {' and '.join(f.shown(group) for f in holders)}, "
                    f"which differ; Hydra takes the first one ({holders[0].shown(group)}{choice}.yaml), "
                    "so give yours another name",
                )
    return argv


def _unaliased(arg: str, folders: Sequence[Folder]) -> str:
    """``group=alias`` (or a sweep ``group=a,alias``) with each alias written as its preset's name."""
    from hydra.core.override_parser.types import ValueType

    parsed = _parse(arg) if "=" in arg and not arg.startswith("-") else None
    aliases = PRESET_ALIASES.get(parsed.key_or_group, {}) if parsed is not None and not parsed.is_delete() else {}
    if not aliases or parsed.value_type not in (ValueType.ELEMENT, ValueType.SIMPLE_CHOICE_SWEEP):
        return arg
    options = set(group_options(folders, parsed.key_or_group))
    choices = _choices(parsed)
    named = [aliases.get(c.lower(), c) if c not in options else c for c in choices]
    return arg if named == choices else f"{arg.split('=', 1)[0]}={','.join(named)}"


def version_line() -> str:
    """What ``python run.py --version`` prints: fairsim's version, then Hydra's and Python's."""
    import platform

    import hydra

    import fairsim

    return f"fairsim {fairsim.__version__} (Hydra {hydra.__version__}, Python {platform.python_version()})"


# ---- Hydra's errors in one line ------------------------------------------------------------------

_ours = False  # HYDRA_FULL_ERROR=1 was set here, not by the user


@contextmanager
def config_errors_in_one_line(argv: list[str], conf_dir: Path, config_name: str = "config") -> Iterator[None]:
    """Around Hydra's ``main()``: its config errors end with one line on stderr and exit 2
    (``FAIRSIM_DEBUG=1``: the full traceback instead)."""
    global _ours
    from hydra.errors import HydraException
    from omegaconf.errors import OmegaConfBaseException

    if os.environ.get(FULL_ERROR) == "1":
        yield
        return
    os.environ[FULL_ERROR] = "1"  # Hydra then raises its errors instead of printing them itself
    _ours = True
    try:
        yield
    except (HydraException, OmegaConfBaseException) as exc:
        if os.environ.get("FAIRSIM_DEBUG"):
            raise
        print(f"error: {hydra_error_line(exc, argv, conf_dir, config_name)}", file=sys.stderr, flush=True)
        sys.exit(2)
    finally:
        hydra_reports_errors()


def hydra_reports_errors() -> None:
    """From now on Hydra reports errors as it does by default (called as a run starts: an error
    inside a run is no config error)."""
    global _ours
    if _ours:
        os.environ.pop(FULL_ERROR, None)
        _ours = False


def _one_line(text: str) -> str:
    return "; ".join(line.strip() for line in str(text).splitlines() if line.strip())


def _source(key: str, overrides: Sequence[str]) -> str:
    keys = {a.split("=", 1)[0].lstrip("+~") for a in overrides}
    return SOURCE if key in keys else "config (a preset's defaults list or hydra.sweeper.params)"


def _closest(word: str, candidates: Sequence[str], prefix: str = "", case: bool = False) -> str:
    """ "; closest: a, b" (the most alike candidates, in any case with ``case``), or ""."""
    if case:
        lower = {c.lower(): c for c in candidates}
        close = [lower[c] for c in difflib.get_close_matches(word.lower(), list(lower), n=3)]
    else:
        close = difflib.get_close_matches(word, list(candidates), n=3)
    return f"; closest: {', '.join(prefix + c for c in close)}" if close else ""


def _no_group(group: str, overrides: Sequence[str], groups: Sequence[str]) -> str:
    return f"{_source(group, overrides)}: {group}: no such config group{_closest(group, groups)} (groups: {', '.join(groups)})"


def hydra_error_line(exc: BaseException, argv: Sequence[str], conf_dir: Path, config_name: str = "config") -> str:
    """One line (without ``error: ``) for a config error Hydra raised."""
    from hydra.errors import MissingConfigException, OverrideParseException
    from omegaconf import DictConfig

    overrides = split_command_line(argv).overrides
    message = str(exc)
    cause = exc.__cause__
    try:
        folders = config_folders(argv, conf_dir, config_name)
    except InputError:
        folders = [Folder(conf_dir.name, conf_dir)]

    if isinstance(exc, OverrideParseException):
        bad = next((a for a in overrides if _parse(a) is None), None)
        return (
            f"{SOURCE}: {bad!r}: not a valid override: {_one_line(message)}"
            if bad
            else f"{SOURCE}: {_one_line(message)}"
        )

    missing = getattr(exc, "missing_cfg_file", None) if isinstance(exc, MissingConfigException) else None
    if missing and "/" in missing and exc.options is not None:
        group, name = missing.rsplit("/", 1)
        asked = re.match(r"In '([^']+)'", message)
        # Hydra's own groups also have presets from Hydra and its plugins: only Hydra's list is complete
        where = "" if group.split("/")[0] == "hydra" else " in " + " or ".join(f.shown(group) for f in folders)
        source = _source(group, overrides)
        if source != SOURCE and asked and asked.group(1) != config_name:
            source = asked.group(1)  # a preset's defaults list asked for it
        return f"{source}: {group}: no preset {name!r}{where}{_closest(name, exc.options, case=True)} (allowed: {', '.join(sorted(exc.options))})"

    unknown = re.match(r"Could not override '([^']+)'\.$", message.splitlines()[0]) if message else None
    parent = getattr(cause, "parent_node", None)
    if unknown and "/" in unknown.group(1):  # a group path that no folder has (policy/mechansim=x)
        return _no_group(unknown.group(1), overrides, group_names(folders))
    if (
        unknown
        and isinstance(parent, DictConfig)
        and getattr(cause, "key", None) is not None
        and not unknown.group(1).endswith(str(cause.key))
    ):  # a mapping value merged into a key, adding keys to it
        full, key = unknown.group(1), str(cause.key)
        has = ", ".join(sorted(str(k) for k in parent)) or "no keys"
        return (
            f"{_source(full, overrides)}: {full}: the value adds the key {key!r}, which {full} does not have "
            f"(it has: {has}); +{full}.{key}=... adds one key"
        )
    if unknown and isinstance(parent, DictConfig) and getattr(cause, "key", None) is not None:
        full = unknown.group(1)
        key = str(cause.key)
        prefix = full[: -len(key)] if full.endswith(key) else ""
        keys = sorted(str(k) for k in parent)
        if not prefix:  # the root: its keys and the config groups (polcy=ours)
            keys = sorted(set(keys) | {g for g in group_names(folders) if "/" not in g})
        value = next((a.split("=", 1)[1] for a in overrides if a.split("=", 1)[0] == full), "...")
        level = prefix.rstrip(".") or "the config"
        return (
            f"{_source(full, overrides)}: {full}: no such key{_closest(key, keys, prefix)} "
            f"({level} has: {', '.join(keys)}; +{full}={value} would add a new key)"
        )

    not_default = re.match(r"Could not override '([^']+)'\. No match in the defaults list\.", message)
    if not_default:
        group = not_default.group(1)
        groups = group_names(folders)
        if group in groups:
            value = next((a.split("=", 1)[1] for a in overrides if a.split("=", 1)[0] == group), "...")
            return f"{_source(group, overrides)}: {group}: not in the defaults list; add it with +{group}={value}"
        return _no_group(group, overrides, groups)

    exists = re.match(r"Could not append to config\. An item is already at '([^']+)'\.", message)
    if exists:
        key = exists.group(1)
        return f"{SOURCE}: +{key}: already in the config; drop the + to change it ({key}=...), or ++{key}=... adds or changes it"

    twice = re.match(r"(\S+) appears more than once in the final defaults list", message) or re.match(
        r"Multiple values for (\S+)\. To override a value use", message
    )
    if twice:
        group = twice.group(1)
        return f"{SOURCE}: +{group}: {group} is already in the defaults list; drop the + to choose another preset ({group}=...)"

    text = _one_line(message)
    if cause is not None and isinstance(cause, Exception) and str(cause) and str(cause) not in message:
        text += f": {_one_line(str(cause))}"
    return f"hydra: {text}"
