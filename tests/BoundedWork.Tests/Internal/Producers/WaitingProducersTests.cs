using BoundedWork.Internal;

namespace BoundedWork.Tests.Internal.Producers;

/// <summary><c>WaitingProducers</c> on its own: a full queue of one, a host that counts, no executor and no watchdog.</summary>
public sealed class WaitingProducersTests
{
    /// <summary>
    /// Regression: an asynchronous producer registers its token's callback before it lines up. A token cancelled in
    /// between (here: before the call, so the callback runs inside the registration) found the waiter not lined up yet
    /// and did nothing; the waiter then lined up and waited for room or its timeout, for good with no timeout.
    /// </summary>
    [Fact]
    public async Task Wait_TokenCancelledBeforeTheWaiterLinesUp_EndsTheWaitAsCancelled()
    {
        var (producers, host) = FullQueue();
        using var cts = new CancellationTokenSource();
        await cts.CancelAsync();

        var waiter = producers.Wait(Item(), blocking: false, Deadline.Never, cts.Token);

        Assert.Equal(0, producers.Count);
        Assert.True(waiter.Task!.IsCanceled, "The waiter still waits for room although its token was cancelled.");
        Assert.Equal(1, host.Cancelled);
    }

    [Fact]
    public async Task WaitForRoomAsync_TokenCancelledBeforeTheProbeLinesUp_EndsTheWaitAsCancelled()
    {
        var (producers, _) = FullQueue();
        using var cts = new CancellationTokenSource();
        await cts.CancelAsync();

        var probe = producers.WaitForRoomAsync(cts.Token);

        Assert.Equal(0, producers.Count);
        Assert.True(probe.IsCanceled, "The probe still waits for room although its token was cancelled.");
    }

    private static (WaitingProducers Producers, CountingHost Host) FullQueue()
    {
        var queue = new TicketQueue(1);
        Assert.Equal(Admission.Admitted, queue.TryAdmit(1, out var ticket));
        queue.Write(ticket, Item());
        var host = new CountingHost();
        return (new WaitingProducers(queue, host), host);
    }

    private static QueuedItem Item() => new(new Action(() => { }), null, static (callback, _) => ((Action)callback)(), null, 0);

    private sealed class CountingHost : IProducerHost
    {
        public int Cancelled;

        public int QueueCapacity => 1;

        public void OnAdmitted()
        {
        }

        public RejectedExecutionException Reject(in QueuedItem item, RejectionReason reason) => new("test", reason);

        public void CancelledWhileWaiting(in QueuedItem item) => Cancelled++;

        public void OnDeadlineAdded()
        {
        }

        public void BlockingWait()
        {
        }
    }
}
