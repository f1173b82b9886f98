"""The paper wing: everything specific to reproducing the FFT paper (ICS '25): the worked examples,
the testbed calibration, one module per figure and table, the headline checks, REPORT.md, and
``python -m fairsim.paper.reproduce``, which runs the sweeps of experiments/paper.yaml and draws them."""
