using System.Collections.Concurrent;
using System.Diagnostics;

namespace BoundedWork.Internal;

/// <summary>
/// The executor's queue: a <see cref="ConcurrentQueue{T}"/> of items behind one 64-bit state word that decides
/// admission, claims and the lifecycle, each in a single atomic step.
/// </summary>
/// <remarks>
/// <para>The state word holds, from the low bits up:</para>
/// <list type="bullet">
/// <item><description>bits 0-30, <c>Count</c>: items admitted and not yet claimed (the queue length);</description></item>
/// <item><description>bits 31-61, <c>Claims</c>: how many items have ever been claimed, modulo 2^31;</description></item>
/// <item><description>bit 62, <c>Shutdown</c>: no item is admitted any more;</description></item>
/// <item><description>bit 63, <c>Abandoned</c>: a shutdown deadline passed; no item is claimed any more.</description></item>
/// </list>
/// <para>
/// Invariant: the items in the <see cref="ConcurrentQueue{T}"/> are exactly the claimed-but-unread items plus
/// <c>Count</c> items, except that an admitted item may not have been written yet. An admission reserves its slot
/// first and writes right after (nothing that can fail runs between the two), so a reader that claimed an item may
/// find it not yet written and spins for those few instructions. Because <c>Count</c> and <c>Claims</c> change in the
/// same atomic step, one read of the state word tells both how many items wait and how many have left the queue
/// since the start, which is what makes the executor's statistics consistent.
/// </para>
/// <para>
/// The queue is FIFO: items are claimed in admission order. A claim does not say which item it gets: the reader
/// takes the oldest. Nothing here blocks, allocates per item (the queue's segments are reused) or needs the
/// ThreadPool.
/// </para>
/// </remarks>
internal sealed class WorkQueue
{
    public const long CountMask = (1L << 31) - 1;
    public const int ClaimsShift = 31;
    public const long ClaimsMask = ((1L << 31) - 1) << ClaimsShift;
    public const long ShutdownBit = 1L << 62;
    public const long AbandonBit = long.MinValue; // bit 63

    private readonly ConcurrentQueue<QueuedItem> _items = new();
    private PaddedInt64 _state;

    /// <summary>Gets the state word now.</summary>
    public long State => Volatile.Read(ref _state.Value);

    /// <summary>Gets the number of queued, unclaimed items.</summary>
    public int Count => (int)(State & CountMask);

    public static int CountOf(long state) => (int)(state & CountMask);

    public static long ClaimsOf(long state) => (state & ClaimsMask) >>> ClaimsShift;

    public static bool IsShutdown(long state) => (state & ShutdownBit) != 0;

    public static bool IsAbandoned(long state) => (state & AbandonBit) != 0;

    /// <summary>Reserves a slot if fewer than <paramref name="capacity"/> items are queued and shutdown has not begun.</summary>
    /// <param name="capacity">The limit; <see cref="int.MaxValue"/> to ignore it (an eviction already made room).</param>
    /// <param name="wasEmpty">Whether the queue was empty before, so the caller knows to wake a worker.</param>
    public Admission TryAdmit(int capacity, out bool wasEmpty)
    {
        var state = Volatile.Read(ref _state.Value);
        while (true)
        {
            wasEmpty = false;
            if ((state & ShutdownBit) != 0)
            {
                return Admission.ShutDown;
            }

            var count = state & CountMask;
            if (count >= capacity || count == CountMask)
            {
                return Admission.Full;
            }

            var previous = Interlocked.CompareExchange(ref _state.Value, state + 1, state);
            if (previous == state)
            {
                wasEmpty = count == 0;
                return Admission.Admitted;
            }

            state = previous;
        }
    }

    /// <summary>Writes an item whose slot <see cref="TryAdmit"/> reserved.</summary>
    public void Write(in QueuedItem item) => _items.Enqueue(item);

    /// <summary>Claims the oldest unclaimed item; fails when none is queued or the queue was abandoned.</summary>
    /// <param name="remaining">How many items are still queued after this claim.</param>
    public bool TryClaim(out int remaining)
    {
        var state = Volatile.Read(ref _state.Value);
        while (true)
        {
            remaining = 0;
            var count = state & CountMask;
            if ((state & AbandonBit) != 0 || count == 0)
            {
                return false;
            }

            var previous = Interlocked.CompareExchange(ref _state.Value, NextClaims(state, 1) - 1, state);
            if (previous == state)
            {
                remaining = (int)count - 1;
                return true;
            }

            state = previous;
        }
    }

    /// <summary>Reads a claimed item: the oldest in the queue. Its writer may be a few instructions behind.</summary>
    public QueuedItem ReadClaimed()
    {
        if (_items.TryDequeue(out var item))
        {
            return item;
        }

        var spinner = default(SpinWait);
        do
        {
            spinner.SpinOnce(sleep1Threshold: -1);
        }
        while (!_items.TryDequeue(out item));
        return item;
    }

    /// <summary>Gets the oldest queued item without claiming it; false when none is (fully) written.</summary>
    public bool TryPeekOldest(out QueuedItem item) => _items.TryPeek(out item);

    /// <summary>Stops admission. Returns false if shutdown had already begun.</summary>
    public bool Freeze()
    {
        var state = Volatile.Read(ref _state.Value);
        while ((state & ShutdownBit) == 0)
        {
            var previous = Interlocked.CompareExchange(ref _state.Value, state | ShutdownBit, state);
            if (previous == state)
            {
                return true;
            }

            state = previous;
        }

        return false;
    }

    /// <summary>
    /// Stops claims for good and claims every queued item in the same step, so nothing queued can start after this.
    /// Returns how many items it claimed; the caller reads exactly that many with <see cref="ReadClaimed"/>.
    /// </summary>
    public int Abandon()
    {
        var state = Volatile.Read(ref _state.Value);
        while (true)
        {
            var count = state & CountMask;
            var next = (NextClaims(state, count) & ~CountMask) | ShutdownBit | AbandonBit;
            var previous = Interlocked.CompareExchange(ref _state.Value, next, state);
            if (previous == state)
            {
                return (int)count;
            }

            state = previous;
        }
    }

    private static long NextClaims(long state, long claimed)
    {
        var claims = (ClaimsOf(state) + claimed) & CountMask;
        Debug.Assert(claims >= 0);
        return (state & ~ClaimsMask) | (claims << ClaimsShift);
    }
}

/// <summary>The result of <see cref="WorkQueue.TryAdmit"/>.</summary>
internal enum Admission
{
    Admitted,
    Full,
    ShutDown,
}
