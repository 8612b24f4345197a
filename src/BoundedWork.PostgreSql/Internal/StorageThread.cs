namespace BoundedWork.PostgreSql.Internal;

/// <summary>
/// One of a node's database loops on a dedicated background thread with synchronous I/O, so the loops go on while the
/// ThreadPool is starved (the situation BoundedWork exists for).
/// </summary>
internal sealed class StorageThread : IDisposable
{
    private readonly Thread _thread;
    private readonly ManualResetEventSlim _exited = new(false);

    private StorageThread(string name, Action loop)
    {
        _thread = new Thread(() =>
        {
            try
            {
                loop();
            }
            finally
            {
                _exited.Set();
            }
        })
        {
            IsBackground = true,
            Name = name,
        };
    }

    public static StorageThread Start(string name, Action loop)
    {
        var thread = new StorageThread(name, loop);
        thread._thread.Start();
        return thread;
    }

    public void Dispose() => _exited.Dispose();

    /// <summary>Waits for the loop to end (its token was cancelled); gives up when <paramref name="cancellationToken"/> fires.</summary>
    /// <returns><see langword="true"/> if the loop ended.</returns>
    public bool Join(TimeSpan timeout, CancellationToken cancellationToken = default)
    {
        try
        {
            return _exited.Wait(timeout, cancellationToken);
        }
        catch (OperationCanceledException)
        {
            return false;
        }
    }
}
