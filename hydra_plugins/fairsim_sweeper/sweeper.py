"""The default sweeper: Hydra's basic sweeper (the same grid, batches and options), which checks
before launching that one cell per distinct choice of presets composes, not every cell.

Hydra's basic sweeper composes every cell's config in the parent before it launches any (to
catch a composition error early), and each worker composes its cell again to run it: for a
1,000-cell grid that is minutes of composing in the parent, one cell at a time, before any runs. What can make
a composition fail is what it reads -- the config files, chosen by the presets -- and the
override keys, which every cell of a grid shares; the values of plain keys (``seed=3``,
``load=0.5``) are not resolved by composing. So one cell per distinct set of preset choices
(overrides of a config group, ``policy=ours``, or of Hydra's own settings) is composed, and finds
any error the whole batch would (a preset that does not exist is refused before Hydra starts,
``fairsim.experiment.cli.check_group_choices``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from hydra._internal.core_plugins.basic_sweeper import BasicSweeper


def representatives(batch: Sequence[Sequence[str]], chooses: Callable[[str], bool]) -> list[Sequence[str]]:
    """The first cell of ``batch`` for each distinct set of overrides that ``chooses``."""
    seen: dict[tuple[str, ...], Sequence[str]] = {}
    for overrides in batch:
        seen.setdefault(tuple(sorted(o for o in overrides if chooses(o))), overrides)
    return list(seen.values())


class FairsimSweeper(BasicSweeper):
    def validate_batch_is_legal(self, batch: Sequence[Sequence[str]]) -> None:
        super().validate_batch_is_legal(representatives(batch, self._chooses))

    def _chooses(self, override: str) -> bool:
        """Whether an override chooses what is read: a config group's preset or Hydra's settings."""
        key = override.split("=", 1)[0].lstrip("+~")
        if key.startswith("hydra") or "/" in key:
            return True
        loader = self.hydra_context.config_loader
        return "." not in key and bool(loader.get_group_options(key))
