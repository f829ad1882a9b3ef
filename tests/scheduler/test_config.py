"""scheduler.config: Volcano's configuration shape, and names the registry knows."""

import pytest

from scheduler import registry
from scheduler.config import ConfigError, SchedulerConfig


def test_config_parses_volcano_shape_and_rejects_unknown_names():
    config = SchedulerConfig.from_yaml(
        'actions: "enqueue, allocate"\ntiers:\n- plugins:\n  - name: gang\n'
        "  - name: nodeorder\n    arguments: {leastrequested.weight: 2}\n"
    )
    assert config.actions == ("enqueue", "allocate")
    assert config.tiers[0][1].arguments == {"leastrequested.weight": 2}
    assert SchedulerConfig.from_dict(config.to_dict()) == config
    with pytest.raises(ConfigError, match="unknown action 'shuffle'"):
        registry.check(SchedulerConfig.from_dict({"actions": "shuffle", "tiers": []}))
    with pytest.raises(ConfigError, match="unknown plugin 'nosuch'"):
        registry.check(
            SchedulerConfig.from_dict(
                {"actions": "allocate", "tiers": [{"plugins": [{"name": "nosuch"}]}]}
            )
        )
