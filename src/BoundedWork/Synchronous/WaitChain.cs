using BoundedWork.Internal;

namespace BoundedWork.Synchronous;

/// <summary>
/// The executors whose worker threads are blocked, directly or through other executors, waiting for the item that
/// runs on the current thread. It flows with every item submitted by a blocking submit-and-wait (set on the worker
/// while the item runs, whatever the executor's ExecutionContext setting), so a nested submit-and-wait back to one
/// of those executors runs inline instead of waiting for a worker that is itself waiting.
/// </summary>
/// <remarks>An immutable linked list: extending it allocates one node and never changes a list another thread holds.</remarks>
internal sealed class WaitChain
{
    [ThreadStatic]
    private static WaitChain? t_current;

    private WaitChain(BoundedExecutor waiting, WaitChain? parent)
    {
        Waiting = waiting;
        Parent = parent;
    }

    public BoundedExecutor Waiting { get; }

    public WaitChain? Parent { get; }

    /// <summary>Gets a value indicating whether a thread of <paramref name="executor"/> waits, transitively, for the current thread.</summary>
    public static bool IsWaitedOnBy(BoundedExecutor executor)
    {
        for (var node = t_current; node is not null; node = node.Parent)
        {
            if (ReferenceEquals(node.Waiting, executor))
            {
                return true;
            }
        }

        return false;
    }

    /// <summary>
    /// The chain an item carries when the current thread blocks waiting for it: the current chain, plus the
    /// current thread's own executor when the current thread is a worker.
    /// </summary>
    public static WaitChain? ForItemAwaitedHere()
    {
        var owner = Worker.Current?.Pool.Owner;
        var current = t_current;
        if (owner is null || IsWaitedOnBy(owner))
        {
            return current;
        }

        return new WaitChain(owner, current);
    }

    /// <summary>Runs <paramref name="function"/> with <paramref name="chain"/> as the current thread's chain.</summary>
    public static TResult Run<TResult>(WaitChain? chain, Func<TResult> function)
    {
        var previous = t_current;
        t_current = chain;
        try
        {
            return function();
        }
        finally
        {
            t_current = previous;
        }
    }
}
