"""loom-sim's shipped configs, installed as the package ``loom_sim.configs`` (package data).

examples/ persona configs · ported/ psychosis-bench profiles as configs · adversaries/ the
trap's and the coaxer's tactics · probes/ the probe's prompt sets · scripted/ scripts ·
packs/ the harness's scenario packs, with the photos their scenarios bring.
"""
