"""FFT's open choices as readings of the headline claims: the variant presets (each changes the
one key it names and sets its label), the sweeps that run them, and the judging helper
(fairsim/paper/readings.py) on hand-made cell tables whose verdicts are known."""

import pandas as pd
import pytest
import yaml
from conftest import ROOT, sweep_inputs
from omegaconf import OmegaConf

from fairsim.experiment.compose import CONF_DIR, compose_config
from fairsim.paper import readings
from fairsim.paper.figures import open_choices
from fairsim.paper.report_table import expand
from fairsim.paper.reproduce import load_plan, sweep_command

PLAN = load_plan()
GROUPS = {"fft_variant": ["policy=ours"], "workload_variant": ["workload=trace1"]}


def _leaves(node, prefix=""):
    if isinstance(node, dict):
        for key, value in node.items():
            yield from _leaves(value, f"{prefix}{key}.")
    else:
        yield prefix[:-1], node


def _composed(overrides):
    cfg = compose_config(overrides)
    return dict(_leaves(OmegaConf.to_container(cfg, resolve=True)))


@pytest.mark.parametrize("group,name", [(g, p.stem) for g in GROUPS for p in sorted((CONF_DIR / g).glob("*.yaml"))])
def test_each_variant_changes_exactly_the_key_it_names(group, name):
    text = (CONF_DIR / group / f"{name}.yaml").read_text()
    assert text.startswith("# @package _global_\n")
    own = dict(_leaves(yaml.safe_load(text)))
    label = own.pop("variant")
    assert len(own) == 1, f"{name} must change one key, changes {sorted(own)}"
    ((key, _),) = own.items()
    base = _composed(GROUPS[group])
    varied = _composed([*GROUPS[group], f"+{group}={name}"])
    changed = {k for k in base.keys() | varied.keys() if base.get(k) != varied.get(k)}
    assert changed == {key, "variant"}
    assert varied["variant"] == label and label.startswith(key.split(".")[-1] if group == "fft_variant" else key)


def test_the_open_choices_sweep_takes_every_fft_variant_and_carries_the_label():
    params = yaml.safe_load((CONF_DIR / "experiment" / "paper_open_choices.yaml").read_text())["hydra"]["sweeper"][
        "params"
    ]
    assert params["policy"] == "ours" and params["+fft_variant"] == "glob(*)"
    assert params["workload"] == "trace1,trace2"
    assert PLAN["sweeps"]["open_choices"]["small"] == PLAN["sweeps"]["testbed"]["small"]  # the baseline's seeds
    shortest = yaml.safe_load((CONF_DIR / "experiment" / "paper_shortest_job.yaml").read_text())["hydra"]["sweeper"][
        "params"
    ]
    testbed = yaml.safe_load((CONF_DIR / "experiment" / "paper_testbed.yaml").read_text())["hydra"]["sweeper"]["params"]
    assert shortest["policy"] == testbed["policy"]  # a workload change moves every policy's cells


def test_the_full_size_variants_run_the_simulated_sweeps_cells():
    """A full-size variant cell is the full simulated sweep's FFT cell with the variant's one key
    changed: same trace, cluster, job count and engine."""
    cmd = sweep_command(PLAN, "open_choices", "full", "res", [])
    full = dict(a.split("=", 1) for a in cmd[3:] if not a.startswith(("sweep_name=", "results_dir=")))
    simulated = dict(a.split("=", 1) for a in PLAN["sweeps"]["simulated"]["full"])
    assert full["cluster"] == simulated["cluster"] and full["num_jobs"] == simulated["num_jobs"]
    assert set(full["workload"].split(",")) <= {f"trace{i}" for i in range(3, 10)}
    assert set(full["seed"].split(",")) <= set(simulated["seed"].split(","))
    same = ["policy=ours", f"cluster={full['cluster']}", f"num_jobs={full['num_jobs']}", "workload=trace3", "seed=0"]
    for variant in full["+fft_variant"].split(","):
        key = next(
            k
            for k, _ in _leaves(yaml.safe_load((CONF_DIR / "fft_variant" / f"{variant}.yaml").read_text()))
            if k != "variant"
        )
        cell = _composed(["+experiment=paper_open_choices", *same, f"+fft_variant={variant}"])
        base = _composed(["+experiment=paper_simulated", *same])
        assert {k for k in base.keys() | cell.keys() if base.get(k) != cell.get(k)} == {"variant", "sweep_name", key}
    shortest = dict(a.split("=", 1) for a in PLAN["sweeps"]["shortest_job"]["full"])
    sim_policies = yaml.safe_load((CONF_DIR / "experiment" / "paper_simulated.yaml").read_text())["hydra"]["sweeper"][
        "params"
    ]["policy"]
    assert (
        shortest["policy"] == sim_policies
        and shortest["workload"] == full["workload"]
        and shortest["cluster"] == full["cluster"]
    )


# ---- the judging helper on hand-made cells -------------------------------------------------------


def cells(
    jct_ratio: dict[str, float], rho_ratio: float = 1.5, ours_jct: float = 100.0, policy_ours="ours"
) -> pd.DataFrame:
    """Traces 1-2 x seeds 0-2: each baseline's avg JCT is ``jct_ratio`` x FFT's, its rho
    ``rho_ratio`` x FFT's (an identical ratio in every pair, seeds spread apart)."""
    rows = []
    for workload in ("trace1", "trace2"):
        for seed in range(3):
            base = ours_jct * (1 + 0.1 * seed)
            for policy, ratio in [(policy_ours, 1.0), *jct_ratio.items()]:
                rho = 1.0 if policy == policy_ours else rho_ratio
                rows.append(
                    {
                        "cell": f"{policy}-{workload}-{seed}",
                        "policy": policy,
                        "workload": workload,
                        "cluster": "paper",
                        "seed": seed,
                        "avg_jct_s": base * ratio,
                        "makespan_s": 10 * base * ratio,
                        "rho_fluid_mean": rho,
                        "rho_fluid_max": 2 * rho,
                        "rho_fluid_lt1_share": 0.5 / rho,
                        "starvation_max_s": 3600 * rho,
                        "switches_to_faster_share": 0.5,
                        "type_switches": 10,
                    }
                )
    return pd.DataFrame(rows)


def specs():
    return [s for s in PLAN["headlines"] if s["sweep"] == "testbed"]


GAVEL_T1 = "avg JCT, Gavel / FFT, Trace 1"


def test_a_variant_that_makes_fft_slower_flips_yes_to_no():
    base = cells({"gavel": 1.5, "tiresias": 1.2})
    slower = cells({"gavel": 1.5, "tiresias": 1.2}, ours_jct=200.0)  # FFT twice as slow: Gavel / FFT 0.75
    slower = slower[slower["policy"] == "ours"].assign(variant="slow")
    verdicts = readings.reading_verdicts(specs(), "testbed", base, {"slow": slower})
    assert verdicts.loc[GAVEL_T1, "default"] == "yes" and verdicts.loc[GAVEL_T1, "slow"] == "no"
    # rho did not change: its claims keep their verdict
    assert verdicts.loc["mean rho reduction vs Gavel (testbed)", "slow"] == "yes"
    same, flips = readings.survivors(verdicts)
    assert "mean rho reduction vs Gavel (testbed)" in same
    assert flips[GAVEL_T1] == {"slow": "no"}
    assert verdicts.loc["avg JCT vs PAL (testbed)"].eq("not measured").all()  # PAL did not run


def test_the_default_column_is_the_headline_table_on_the_same_cells():
    base = cells({"gavel": 1.5, "tiresias": 0.9})
    rows = readings.judge(specs(), "testbed", base)
    variant = base[base["policy"] == "ours"].assign(variant="same")
    verdicts = readings.reading_verdicts(specs(), "testbed", base, {"same": variant})
    assert verdicts["default"].to_dict() == {r.claim: r.verdict for r in rows} == verdicts["same"].to_dict()


def test_stand_in_replaces_only_the_readings_policies_on_the_settings_it_covers():
    base = cells({"gavel": 1.5, "tiresias": 1.2})
    event_clock = cells({"tiresias": 0.5})  # a reading of the baselines: only Tiresias' cells replace
    event_clock = event_clock[(event_clock["policy"] == "tiresias") & (event_clock["workload"] == "trace1")]
    mixed = readings.stand_in(base, event_clock)
    assert set(mixed["workload"]) == {"trace1"}  # judged on the settings the reading covers
    ours = mixed[mixed["policy"] == "ours"].set_index("seed")["avg_jct_s"]
    tiresias = mixed[mixed["policy"] == "tiresias"].set_index("seed")["avg_jct_s"]
    assert (tiresias / ours).round(9).eq(0.5).all()  # the reading's Tiresias against the base's FFT
    assert len(mixed[mixed["policy"] == "gavel"]) == 3
    with pytest.raises(ValueError, match="no cells of pal"):
        readings.stand_in(base, event_clock, ["pal"])


def test_report_section_lists_the_flips_and_the_survivors(tmp_path):
    base = cells({"gavel": 1.5, "tiresias": 1.2})
    slow = cells({}, ours_jct=200.0).assign(variant="rho_weight=100")
    fast = cells({}, ours_jct=50.0).assign(variant="age_weight=0")
    shortest = cells({"gavel": 1.5, "tiresias": 1.2}).assign(variant="workload.min_duration_s=round")
    data = sweep_inputs(tmp_path, {"testbed": base, "open_choices": pd.concat([slow, fast]), "shortest_job": shortest})
    lines = expand(open_choices.report_section(data, PLAN["headlines"]), tmp_path / "out")
    text = "\n".join(lines)
    assert lines[0] == "## Which verdicts depend on FFT's open choices"
    row = next(line for line in lines if line.startswith(f"| {GAVEL_T1} |"))
    assert row == f"| {GAVEL_T1} | Y | N | Y | Y |"
    assert f"- {GAVEL_T1}: Y by default; N under `rho_weight=100`." in text
    assert (
        "mean rho reduction vs Gavel (testbed) (Y)" in text.split("Same verdict under every variant")[1].split("\n")[0]
    )
    paths = open_choices.draw(data, tmp_path / "out", PLAN["headlines"])
    assert [p.name for p in paths] == ["open_choices.csv", "open_choices_metrics.csv"]
    metrics = pd.read_csv(paths[1])
    jct = metrics[metrics["metric"] == "avg_jct_h"].set_index("reading")  # the unit in the name
    assert jct.loc["rho_weight=100", "gavel_over_ours"] == pytest.approx(0.75)
    assert jct.loc["default", "gavel_over_ours"] == pytest.approx(1.5)


def test_variants_on_other_traces_are_not_judged_against_the_testbed(tmp_path):
    base = cells({"gavel": 1.5})
    elsewhere = cells({}).assign(workload=lambda t: t["workload"].str.replace("trace", "trace6"), variant="x")
    data = sweep_inputs(tmp_path, {"testbed": base, "open_choices": elsewhere})
    assert open_choices.report_section(data, PLAN["headlines"]) == []


def test_the_plan_draws_the_section_only_when_asked():
    entry = PLAN["figures"]["open_choices"]
    assert entry["optional"] is True and set(entry["sweeps"]) == {"testbed", "open_choices", "shortest_job"}
    assert (ROOT / "Makefile").read_text().count("--only open_choices") == 1


def test_the_sweep_counts_a_glob_of_variants_and_a_command_line_subset():
    from hydra import initialize_config_dir

    from fairsim.experiment.sweep import count_cells

    n = len(list((CONF_DIR / "fft_variant").glob("*.yaml")))
    params = yaml.safe_load((CONF_DIR / "experiment" / "paper_open_choices.yaml").read_text())["hydra"]["sweeper"][
        "params"
    ]

    def multirun(*task):  # the part of a multirun's config that count_cells reads
        return OmegaConf.create(
            {"hydra": {"overrides": {"task": ["+experiment=paper_open_choices", *task]}, "sweeper": {"params": params}}}
        )

    with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):  # glob lists the group through Hydra
        assert count_cells(multirun()) == n * 2 * 3  # variants x traces 1-2 x seeds 0-2
        assert count_cells(multirun("+fft_variant=age_weight_0,mu_constant", "seed=0,1,2,3,4")) == 2 * 2 * 5
