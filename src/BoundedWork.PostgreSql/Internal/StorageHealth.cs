namespace BoundedWork.PostgreSql.Internal;

/// <summary>
/// Whether each of a node's database loops (claiming, listening, writing outcomes, heartbeats, statistics) reached the
/// database the last time it tried; the storage is available while none is failing.
/// </summary>
/// <param name="onFailure">Called on each loop's first failure: drops the idle pooled connections, which a database restart leaves broken.</param>
internal sealed class StorageHealth(Action onFailure)
{
    private readonly Lock _sync = new();
    private readonly Dictionary<string, string> _failures = new(StringComparer.Ordinal);

    public bool IsAvailable
    {
        get
        {
            lock (_sync)
            {
                return _failures.Count == 0;
            }
        }
    }

    public string? LastError
    {
        get
        {
            lock (_sync)
            {
                return _failures.Count == 0 ? null : string.Join("; ", _failures.Select(failure => $"{failure.Key}: {failure.Value}"));
            }
        }
    }

    /// <returns><see langword="true"/> if this is the loop's first failure since it last succeeded.</returns>
    public bool Failed(string loop, Exception error)
    {
        lock (_sync)
        {
            var first = !_failures.ContainsKey(loop);
            _failures[loop] = error.GetBaseException().Message;
            if (!first)
            {
                return false;
            }
        }

        onFailure();
        return true;
    }

    /// <returns><see langword="true"/> if the loop was failing until now.</returns>
    public bool Succeeded(string loop)
    {
        lock (_sync)
        {
            return _failures.Remove(loop);
        }
    }
}
