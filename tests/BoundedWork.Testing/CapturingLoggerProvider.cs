using System.Collections.Concurrent;
using Microsoft.Extensions.Logging;

namespace BoundedWork.Testing;

/// <summary>A log entry captured by <see cref="CapturingLoggerProvider"/>.</summary>
public sealed record LogEntry(string Category, LogLevel Level, EventId EventId, string Message, Exception? Exception, IReadOnlyDictionary<string, object?> State);

/// <summary>Captures every log entry in memory, with its structured state.</summary>
public sealed class CapturingLoggerProvider : ILoggerProvider
{
    private readonly ConcurrentQueue<LogEntry> _entries = new();

    public IReadOnlyList<LogEntry> Entries => [.. _entries];

    public IReadOnlyList<LogEntry> WithEvent(string eventName) => [.. _entries.Where(e => e.EventId.Name == eventName)];

    public ILogger CreateLogger(string categoryName) => new CapturingLogger(this, categoryName);

    public void Dispose()
    {
    }

    private sealed class CapturingLogger(CapturingLoggerProvider provider, string category) : ILogger
    {
        public IDisposable? BeginScope<TState>(TState state) where TState : notnull => null;

        public bool IsEnabled(LogLevel logLevel) => true;

        public void Log<TState>(LogLevel logLevel, EventId eventId, TState state, Exception? exception, Func<TState, Exception?, string> formatter)
        {
            var values = new Dictionary<string, object?>();
            if (state is IEnumerable<KeyValuePair<string, object?>> pairs)
            {
                foreach (var pair in pairs)
                {
                    values[pair.Key] = pair.Value;
                }
            }

            provider._entries.Enqueue(new LogEntry(category, logLevel, eventId, formatter(state, exception), exception, values));
        }
    }
}
