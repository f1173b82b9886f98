"""Fig. 3: Table 1's two jobs round by round. Gavel realizes its 50/50 time-fraction split by
swapping the jobs between the fast and the slow GPU every few rounds (a migration each time;
free here, as in the paper's example); the optimal order (what FFT does) keeps job A on the
fast GPU and moves job B there once A is done."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from fairsim.figures import style
from fairsim.figures.tables import Check
from fairsim.paper.examples import gavel_round_len_s, table1_example
from fairsim.paper.figures.example_panels import gantt_panels, gantt_rows


def results():
    """(example, {policy: result}) with Gavel in short rounds and FFT in 1-minute rounds."""
    gavel = table1_example(gavel_round_len_s())
    fft = table1_example()
    return gavel, {"gavel": gavel.run(gavel.policy("gavel")), "ours": fft.run(fft.policy("ours"))}


def draw(inputs, out_dir: Path) -> list[Check]:
    example, runs = results()
    titles = {
        name: f"{style.label(name)} ({r.schedule['duration_s'].iloc[0]:g}-s rounds): total JCT "
        f"{r.jobs['jct_s'].sum() / 60:.2f} min, {int(r.jobs['type_switches'].sum())} migration(s)"
        for name, r in runs.items()
    }
    titles["ours"] = titles["ours"].replace("FFT", "FFT = optimal order")
    with style.paper_style():
        fig = gantt_panels(
            example, runs, titles, "Fig. 3: Table 1's jobs, Gavel's round-by-round split vs the optimal order", 1.7
        )
        style.save(
            fig,
            out_dir,
            "fig3",
            pd.concat([gantt_rows(example, r, name) for name, r in runs.items()], ignore_index=True),
        )
    gavel = runs["gavel"].jobs
    return [
        Check(
            "Fig. 3",
            "migrations Gavel's rounds cause (2 jobs, 16 epochs each)",
            "one per round the jobs swap",
            f"{int(gavel['type_switches'].sum())} in {len(runs['gavel'].rounds)} rounds of {gavel_round_len_s():g} s",
            {
                "migrations": int(gavel["type_switches"].sum()),
                "rounds": len(runs["gavel"].rounds),
                "round_len_s": gavel_round_len_s(),
            },
        )
    ]
