"""fairsim's sweeper (hydra_plugins/fairsim_sweeper): before launching, one cell per distinct
choice of presets is composed, not every cell of the grid."""

from __future__ import annotations

from hydra import initialize_config_dir
from hydra.core.global_hydra import GlobalHydra
from hydra.core.plugins import Plugins
from hydra.types import HydraContext

from fairsim.experiment.compose import CONF_DIR
from hydra_plugins.fairsim_sweeper.sweeper import representatives


def test_one_cell_per_choice_of_presets_is_composed_before_launching():
    batch = [[f"policy={p}", f"seed={s}", "load=0.5"] for p in ("fifo", "ours") for s in range(3)]
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
        # the class as Hydra's plugin discovery loaded it (discovery imports the core plugins afresh)
        sweeper = Plugins.instance().class_name_to_class["hydra_plugins.fairsim_sweeper.sweeper.FairsimSweeper"](
            max_batch_size=None
        )
        sweeper.hydra_context = HydraContext(config_loader=GlobalHydra.instance().config_loader(), callbacks=None)
        assert representatives(batch, sweeper._chooses) == [batch[0], batch[3]]
        assert sweeper._chooses("cluster=scale8") and sweeper._chooses("+experiment=smoke")
        assert sweeper._chooses("hydra/launcher=basic") and sweeper._chooses("hydra.searchpath=[pkg://x]")
        assert not any(sweeper._chooses(o) for o in ("seed=1", "policy.starve_h=2", "load=0.5", "+variant=a"))
