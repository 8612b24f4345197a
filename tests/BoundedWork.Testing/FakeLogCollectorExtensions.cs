using Microsoft.Extensions.Logging.Testing;

namespace BoundedWork.Testing;

/// <summary>Finding what a <see cref="FakeLogCollector"/> captured by event name (it has no such query of its own).</summary>
public static class FakeLogCollectorExtensions
{
    /// <summary>The records of one event, found by its name, in the order they were logged.</summary>
    public static IReadOnlyList<FakeLogRecord> WithEvent(this FakeLogCollector logs, string eventName) =>
        [.. logs.GetSnapshot().Where(record => record.Id.Name == eventName)];
}
