"""Panel registry: the left dock holds SIDE_PANEL_CLASSES; the tabs are grouped by
PANEL_GROUPS (group title, panel classes in tab order). PANEL_CLASSES lists them all."""

from detokgui.gui.panels.auroc_view import AUROCPanel
from detokgui.gui.panels.compare_classes import CompareClassesPanel
from detokgui.gui.panels.compare_pattern import ComparePatternPanel
from detokgui.gui.panels.compare_stats import CompareStatsPanel
from detokgui.gui.panels.compare_topk import CompareTopKPanel
from detokgui.gui.panels.contextual import ContextualPanel
from detokgui.gui.panels.empirical_view import EmpiricalPanel
from detokgui.gui.panels.frequency_view import FrequencyPanel
from detokgui.gui.panels.head_matching import HeadMatchingPanel
from detokgui.gui.panels.head_stats import HeadStatsPanel
from detokgui.gui.panels.heatmap import HeatmapPanel
from detokgui.gui.panels.key_position import KeyPositionPanel
from detokgui.gui.panels.kl_view import KLPanel
from detokgui.gui.panels.layer1_view import Layer1Panel
from detokgui.gui.panels.neighbours_view import NeighboursPanel
from detokgui.gui.panels.neurons import NeuronBrowserPanel
from detokgui.gui.panels.ov_circuit import OVCircuitPanel
from detokgui.gui.panels.position_stats import PositionStatsPanel
from detokgui.gui.panels.positional_bias import PositionalBiasPanel
from detokgui.gui.panels.positional_pattern import PositionalPatternPanel
from detokgui.gui.panels.sentence_view import SentenceViewPanel
from detokgui.gui.panels.series_view import SeriesPanel
from detokgui.gui.panels.sinks_view import SinksPanel
from detokgui.gui.panels.token_search import TokenSearchPanel
from detokgui.gui.panels.topk import TopKPanel

SIDE_PANEL_CLASSES = [TokenSearchPanel]
PANEL_GROUPS = [
    ("Tokens", [TopKPanel, HeatmapPanel]),
    ("Positions", [PositionalBiasPanel, PositionalPatternPanel, KeyPositionPanel,
                   PositionStatsPanel, NeuronBrowserPanel]),
    ("Texts", [SentenceViewPanel, EmpiricalPanel, KLPanel, SinksPanel, ContextualPanel,
               OVCircuitPanel]),
    ("Layer 1", [Layer1Panel]),
    ("Vocabulary", [HeadStatsPanel, AUROCPanel, FrequencyPanel, NeighboursPanel]),
    ("Compare", [HeadMatchingPanel, CompareTopKPanel, ComparePatternPanel,
                 CompareClassesPanel, CompareStatsPanel]),
    ("Training", [SeriesPanel]),
]
PANEL_CLASSES = [cls for _, group in PANEL_GROUPS for cls in group]
