"""What the configuration loader says about names (README, "The scheduler configuration"):
"An unknown action, plugin, switch or argument is an error that names it and lists what is
supported; an argument only Volcano implements is accepted with a warning on the Scheduler
page"."""

from __future__ import annotations

import pytest

from scheduler import registry
from scheduler.config import ConfigError

BASE = """\
actions: "enqueue, allocate, preempt, reclaim, backfill"
tiers:
- plugins:
  - name: priority
  - name: gang
- plugins:
  - name: predicates
  - name: capacity
    enableHierarchy: true
configurations:
- name: {action}
  arguments: {{{argument}: 1}}
"""


@pytest.mark.parametrize("action", ["allocate", "preempt", "reclaim", "backfill"])
def test_an_unknown_action_argument_is_an_error_that_names_it(action):
    """``configurations`` hold action arguments; a misspelt one (here ``nosuchArgument``) must
    be refused with its name, as an unknown plugin argument or enqueue argument is. Only the
    enqueue action's arguments are checked (SchedulerConfig.enqueue_arguments); those of
    allocate, preempt, reclaim and backfill are accepted silently — no error, no warning."""
    text = BASE.format(action=action, argument="nosuchArgument")
    with pytest.raises(ConfigError, match="nosuchArgument"):
        registry.load(text)


@pytest.mark.parametrize(
    ("action", "argument"),
    [("preempt", "enableTopologyAwarePreemption"), ("allocate", "predicateErrorCacheEnable")],
)
def test_a_volcano_only_action_argument_loads_with_a_warning(action, argument):
    """Volcano's actions read arguments Sluice does not implement (preempt.go's parseArguments:
    enableTopologyAwarePreemption, minCandidateNodesPercentage…; every action's
    predicateErrorCacheEnable). A Volcano configuration that sets one must load unchanged, and
    the Scheduler page must warn that it is ignored, as it does for plugin arguments
    (registry.warnings: "ignored (Volcano only): …"). Today nothing is said."""
    config = registry.load(BASE.format(action=action, argument=argument))
    assert any(argument in warning for warning in registry.warnings(config))
