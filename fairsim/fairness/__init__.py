"""Fairness references: the capped 1/N fair share (``share``) and the trace's fluid max-min fair
schedule (``fluid``), the reference every policy's finish-time fairness is measured against."""
