namespace BoundedWork.Internal;

/// <summary>
/// Producers waiting for room in the queue under the Wait policy, woken one at a time, oldest first.
/// A waiter that gives up after being woken passes the wake-up on, so no freed slot is wasted.
/// </summary>
internal sealed class SpaceWaiters
{
    private readonly LinkedList<TaskCompletionSource<bool>> _waiters = new();
    private int _count;

    private object SyncObj => _waiters;

    /// <summary>Gets a value indicating whether any producer waits. A full-fence read after a slot is freed.</summary>
    public bool Any => Volatile.Read(ref _count) > 0;

    public LinkedListNode<TaskCompletionSource<bool>> Register()
    {
        // Continuations run asynchronously: a worker freeing a slot must never run a producer's code.
        var node = new LinkedListNode<TaskCompletionSource<bool>>(new TaskCompletionSource<bool>(TaskCreationOptions.RunContinuationsAsynchronously));
        lock (SyncObj)
        {
            _waiters.AddLast(node);
            Interlocked.Increment(ref _count);
        }

        return node;
    }

    /// <summary>Removes a waiter that stops waiting; if it had been woken meanwhile, wakes the next one instead.</summary>
    public void Unregister(LinkedListNode<TaskCompletionSource<bool>> node)
    {
        lock (SyncObj)
        {
            if (node.List is not null)
            {
                _waiters.Remove(node);
                Interlocked.Decrement(ref _count);
                return;
            }
        }

        // Already removed by WakeOne or WakeAll (which completes it just after releasing the lock):
        // the wake-up it carries belongs to someone else now.
        WakeOne();
    }

    public void WakeOne()
    {
        TaskCompletionSource<bool>? waiter = null;
        lock (SyncObj)
        {
            var first = _waiters.First;
            if (first is not null)
            {
                _waiters.RemoveFirst();
                Interlocked.Decrement(ref _count);
                waiter = first.Value;
            }
        }

        // Completed outside the lock; its continuations are asynchronous.
        waiter?.TrySetResult(true);
    }

    public void WakeAll()
    {
        List<TaskCompletionSource<bool>> woken;
        lock (SyncObj)
        {
            woken = [.. _waiters];
            _waiters.Clear();
            Interlocked.Exchange(ref _count, 0);
        }

        foreach (var waiter in woken)
        {
            waiter.TrySetResult(true);
        }
    }
}
