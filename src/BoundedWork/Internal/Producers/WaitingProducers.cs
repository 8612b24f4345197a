using System.Diagnostics;

namespace BoundedWork.Internal;

/// <summary>
/// Producers waiting for room, oldest first. All access is under <see cref="SyncObj"/>; <see cref="Any"/> can be
/// read without it. A worker that frees a slot, a producer that registers, a capacity increase, the watchdog
/// (timeouts), a cancellation and shutdown each take waiters out under the lock, and complete them after it.
/// </summary>
internal sealed class WaitingProducers
{
    private readonly LinkedList<ProducerWaiter> _waiters = new();
    private PaddedInt32 _count;

    public object SyncObj => _waiters;

    /// <summary>Gets a value indicating whether any producer waits. A full-fence read pairs with the worker's claim.</summary>
    public bool Any => Volatile.Read(ref _count.Value) > 0;

    public int Count => Volatile.Read(ref _count.Value);

    public void Add(ProducerWaiter waiter)
    {
        lock (SyncObj)
        {
            _waiters.AddLast(waiter.Node);
            Interlocked.Increment(ref _count.Value);
        }
    }

    /// <summary>Removes the waiter if it is still waiting; false if another party already took it.</summary>
    public bool TryRemove(ProducerWaiter waiter)
    {
        lock (SyncObj)
        {
            if (waiter.Node.List is null)
            {
                return false;
            }

            RemoveUnsynchronized(waiter);
            return true;
        }
    }

    public ProducerWaiter? OldestUnsynchronized
    {
        get
        {
            Debug.Assert(Monitor.IsEntered(SyncObj));
            return _waiters.First?.Value;
        }
    }

    public void RemoveUnsynchronized(ProducerWaiter waiter)
    {
        Debug.Assert(Monitor.IsEntered(SyncObj));
        _waiters.Remove(waiter.Node);
        Interlocked.Decrement(ref _count.Value);
    }

    /// <summary>Takes every waiter out, oldest first.</summary>
    public List<ProducerWaiter> RemoveAll()
    {
        lock (SyncObj)
        {
            var all = new List<ProducerWaiter>(_waiters);
            _waiters.Clear();
            Interlocked.Exchange(ref _count.Value, 0);
            return all;
        }
    }

    /// <summary>Takes out the waiters whose deadline is at or before <paramref name="now"/>.</summary>
    public List<ProducerWaiter>? RemoveExpired(long now)
    {
        List<ProducerWaiter>? expired = null;
        lock (SyncObj)
        {
            var node = _waiters.First;
            while (node is not null)
            {
                var next = node.Next;
                if (node.Value.Deadline <= now)
                {
                    (expired ??= []).Add(node.Value);
                    RemoveUnsynchronized(node.Value);
                }

                node = next;
            }
        }

        return expired;
    }

    /// <summary>Gets the earliest deadline of any waiter (<see cref="Deadline.Never"/> when none has one).</summary>
    public long EarliestDeadline()
    {
        if (!Any)
        {
            return Deadline.Never;
        }

        var earliest = Deadline.Never;
        lock (SyncObj)
        {
            foreach (var waiter in _waiters)
            {
                earliest = Math.Min(earliest, waiter.Deadline);
            }
        }

        return earliest;
    }
}
