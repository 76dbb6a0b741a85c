"""Run directories read whole: any run (single or matrix) as its cells, their score states,
the runs of a results folder (``loom-sim runs``) and flat rows (``loom-sim export``)."""
