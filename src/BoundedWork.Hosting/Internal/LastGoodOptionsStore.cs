using System.Collections.Concurrent;
using System.Diagnostics.CodeAnalysis;

namespace BoundedWork.Hosting.Internal;

/// <summary>The last valid options created for each executor name; shared by every options factory.</summary>
internal sealed class LastGoodOptionsStore
{
    private readonly ConcurrentDictionary<string, BoundedExecutorOptions> _lastGood = new(StringComparer.Ordinal);

    public void Remember(string name, BoundedExecutorOptions options) => _lastGood[name] = options;

    public bool TryGet(string name, [NotNullWhen(true)] out BoundedExecutorOptions? options) => _lastGood.TryGetValue(name, out options);
}
