using System.Collections.Concurrent;
using System.Diagnostics.CodeAnalysis;

namespace BoundedWork.Hosting.Internal;

/// <summary>
/// The last valid options of each running executor. The registry keeps them (when it creates an executor and when a
/// reload is valid); the options validator reads whether an executor runs, since a running executor's reloads are the
/// registry's to judge.
/// </summary>
internal sealed class LastGoodOptionsStore
{
    private readonly ConcurrentDictionary<string, BoundedExecutorOptions> _lastGood = new(StringComparer.Ordinal);

    public void Remember(string name, BoundedExecutorOptions options) => _lastGood[name] = options;

    public bool TryGet(string name, [NotNullWhen(true)] out BoundedExecutorOptions? options) => _lastGood.TryGetValue(name, out options);

    public bool Contains(string name) => _lastGood.ContainsKey(name);
}
