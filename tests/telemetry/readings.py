"""Reading Forge's instruments from an InMemoryMetricReader, as changes since a test began."""

from dataclasses import dataclass, field
from typing import Any

from opentelemetry.sdk.metrics.export import InMemoryMetricReader

from workers.telemetry.metrics import ProcessMetrics

Key = tuple[str, tuple[tuple[str, Any], ...]]


def _points(reader: InMemoryMetricReader) -> dict[Key, float]:
    """Every data point: a counter's value, a histogram's count of observations."""
    found: dict[Key, float] = {}
    data = reader.get_metrics_data()
    for resource in data.resource_metrics if data else ():
        for scope in resource.scope_metrics:
            for metric in scope.metrics:
                for point in metric.data.data_points:
                    labels = tuple(sorted((point.attributes or {}).items()))
                    value = getattr(point, "count", None)
                    found[(metric.name, labels)] = float(
                        value if value is not None else point.value
                    )
    return found


@dataclass
class Readings:
    """The provider's readings, as differences from when this object was made."""

    process: ProcessMetrics
    reader: InMemoryMetricReader
    _start: dict[Key, float] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self._start = _points(self.reader)

    def grew(self, name: str, **labels: str) -> float:
        """How much `name` grew over the label sets that carry every one of `labels`."""
        total = 0.0
        for (metric, key), value in _points(self.reader).items():
            found = dict(key)
            if metric == name and all(found.get(k) == v for k, v in labels.items()):
                total += value - self._start.get((metric, key), 0.0)
        return total
