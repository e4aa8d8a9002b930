"""From stored repetitions to verdicts: the statistics (`stats`: ratios with intervals, the verdict rule),
the judging of a run's cells (`judging`), and the A-A calibration of this machine's noise (`calibrate`)."""

from dbsweep.verdicts.judging import Judged, by_repetition, judge, judge_values, run_verdicts, unsure_targets

__all__ = ["Judged", "by_repetition", "judge", "judge_values", "run_verdicts", "unsure_targets"]
