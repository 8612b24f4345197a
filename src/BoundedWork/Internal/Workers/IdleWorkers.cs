using System.Diagnostics;

namespace BoundedWork.Internal;

/// <summary>
/// The workers that are parked (or about to park), last parked first woken, so the threads that ran most recently,
/// with warm caches, take the next items, and the surplus stays parked without burning CPU.
/// </summary>
/// <remarks>
/// <para>
/// Its part in the lost-wake-up argument (written out in <see cref="WorkerPool"/>): announcing is an interlocked
/// increment of <c>_count</c> that the worker makes before it re-checks for work, and a waker reads <c>_count</c> after
/// making work visible, so at least one of the two sees the other.
/// </para>
/// <para>
/// A worker's entry is removed by exactly one party: the worker itself (<see cref="TryWithdraw"/>, when it found work
/// after announcing) or a waker (<see cref="WakeOne"/>/<see cref="WakeAll"/>), which then unparks it. A worker whose
/// withdrawal fails has been, or is being, unparked; it parks once to consume that permit, which returns at once or as
/// soon as the waker's unpark lands. Invariant, under <see cref="SyncObj"/>: <c>_count</c> is the stack's length and
/// no worker is on the stack twice (<see cref="AssertInvariantsUnsynchronized"/>).
/// </para>
/// </remarks>
internal sealed class IdleWorkers
{
    private readonly List<Worker> _stack = [];
    private PaddedInt32 _count;

    private object SyncObj => _stack;

    /// <summary>Gets a value indicating whether any worker is parked or about to park (a full-fence read pairs with the submitter's interlocked step).</summary>
    public bool Any => Volatile.Read(ref _count.Value) > 0;

    /// <summary>Gets the number of idle workers.</summary>
    public int Count => Volatile.Read(ref _count.Value);

    /// <summary>Puts the worker on top of the idle stack. The caller re-checks for work afterwards.</summary>
    public void Announce(Worker worker)
    {
        lock (SyncObj)
        {
            AssertInvariantsUnsynchronized();
            _stack.Add(worker);
            Interlocked.Increment(ref _count.Value);
        }
    }

    /// <summary>Takes the worker off the stack if no waker took it first.</summary>
    /// <returns><see langword="true"/> if withdrawn; <see langword="false"/> if a waker took it and will unpark it.</returns>
    public bool TryWithdraw(Worker worker)
    {
        lock (SyncObj)
        {
            AssertInvariantsUnsynchronized();
            var index = _stack.LastIndexOf(worker);
            if (index < 0)
            {
                return false;
            }

            _stack.RemoveAt(index);
            Interlocked.Decrement(ref _count.Value);
            return true;
        }
    }

    /// <summary>Wakes the most recently parked worker, if any.</summary>
    public bool WakeOne()
    {
        if (!Any)
        {
            return false;
        }

        Worker? woken = null;
        lock (SyncObj)
        {
            AssertInvariantsUnsynchronized();
            if (_stack.Count > 0)
            {
                woken = _stack[^1];
                _stack.RemoveAt(_stack.Count - 1);
                Interlocked.Decrement(ref _count.Value);
            }
        }

        // Unparked outside the idle lock: the parker has its own.
        woken?.Parker.Unpark();
        return woken is not null;
    }

    /// <summary>Wakes every parked worker (resize, shutdown).</summary>
    public void WakeAll()
    {
        Worker[] woken;
        lock (SyncObj)
        {
            AssertInvariantsUnsynchronized();
            if (_stack.Count == 0)
            {
                return;
            }

            woken = [.. _stack];
            _stack.Clear();
            Interlocked.Exchange(ref _count.Value, 0);
        }

        foreach (var worker in woken)
        {
            worker.Parker.Unpark();
        }
    }

    [Conditional("DEBUG")]
    private void AssertInvariantsUnsynchronized()
    {
        Debug.Assert(Monitor.IsEntered(SyncObj));
        Debug.Assert(_stack.Count == Volatile.Read(ref _count.Value), "The idle count is the stack's length.");
        Debug.Assert(_stack.Distinct().Count() == _stack.Count, "No worker is idle twice.");
    }
}
