"""The prompt assembler: config x turn -> phase, intensities, injection and prompt blocks."""

from loom_sim.assembler.injection import InjectionKind, InjectionScheduler
from loom_sim.assembler.intensity import IntensityResolver, level_of
from loom_sim.assembler.phases import PhaseSchedule, PhaseWindow
from loom_sim.assembler.prompt_builder import PromptBlocks, PromptBuilder, RevelationChoice
from loom_sim.assembler.rendering import TEMPLATE_VERSION
from loom_sim.assembler.turns import Assembler, TurnPlan

__all__ = [
    "TEMPLATE_VERSION",
    "Assembler",
    "InjectionKind",
    "InjectionScheduler",
    "IntensityResolver",
    "PhaseSchedule",
    "PhaseWindow",
    "PromptBlocks",
    "PromptBuilder",
    "RevelationChoice",
    "TurnPlan",
    "level_of",
]
