namespace BoundedWork.Benchmarks.Infrastructure;

/// <summary>
/// A fixed set of dedicated producer threads, created once (in a benchmark's GlobalSetup) and reused by every
/// operation, so thread creation is never part of a measurement. <see cref="Run"/> releases all producers at once,
/// each submits its share of the items through the contender's submit loop, and returns when all have finished.
/// Each producer thread carries a request's ExecutionContext (<see cref="RequestContext"/>), as request code does.
/// </summary>
public sealed class ProducerGang : IDisposable
{
    private readonly Thread[] _threads;
    private readonly SemaphoreSlim[] _start;
    private readonly CountdownEvent _finished;
    private readonly int[] _shares;
    private readonly Action<int, int> _produce;
    private volatile bool _stopping;
    private Exception? _failure;

    /// <param name="producers">Number of producer threads.</param>
    /// <param name="totalItems">Items per operation, split as evenly as possible between the producers.</param>
    /// <param name="produce">The submit loop: (producer index, item count).</param>
    public ProducerGang(int producers, int totalItems, Action<int, int> produce)
    {
        ArgumentOutOfRangeException.ThrowIfLessThan(producers, 1);
        _produce = produce;
        _threads = new Thread[producers];
        _start = new SemaphoreSlim[producers];
        _shares = new int[producers];
        _finished = new CountdownEvent(producers);
        for (var i = 0; i < producers; i++)
        {
            _shares[i] = (totalItems / producers) + (i < totalItems % producers ? 1 : 0);
            _start[i] = new SemaphoreSlim(0);
            var index = i;
            _threads[i] = new Thread(() => ProducerMain(index))
            {
                IsBackground = true,
                Name = $"producer#{i}",
            };
            _threads[i].Start();
        }
    }

    public int Count => _threads.Length;

    /// <summary>Gets the number of items producer <paramref name="index"/> submits per operation.</summary>
    public int ShareOf(int index) => _shares[index];

    /// <summary>Runs one round: every producer submits its share. Returns when all producers have returned.</summary>
    public void Run(Func<string> describe)
    {
        _finished.Reset();
        foreach (var start in _start)
        {
            start.Release();
        }

        if (!_finished.Wait(WorkCounter.HangTimeout))
        {
            var message = $"HANG: {_finished.CurrentCount} producer(s) still submitting after {WorkCounter.HangTimeout.TotalSeconds:0} s. {describe()}";
            Console.Error.WriteLine(message);
            throw new TimeoutException(message);
        }

        if (Interlocked.Exchange(ref _failure, null) is { } failure)
        {
            throw new InvalidOperationException($"A producer failed: {failure.Message}. {describe()}", failure);
        }
    }

    public void Dispose()
    {
        _stopping = true;
        foreach (var start in _start)
        {
            start.Release();
        }

        foreach (var thread in _threads)
        {
            thread.Join(TimeSpan.FromSeconds(10));
        }

        foreach (var start in _start)
        {
            start.Dispose();
        }

        _finished.Dispose();
    }

    private void ProducerMain(int index)
    {
        RequestContext.Enter();
        while (true)
        {
            _start[index].Wait();
            if (_stopping)
            {
                return;
            }

            try
            {
                _produce(index, _shares[index]);
            }
            catch (Exception ex)
            {
                Console.Error.WriteLine($"Producer #{index} failed: {ex}");
                Interlocked.CompareExchange(ref _failure, ex, null);
            }

            _finished.Signal();
        }
    }
}
