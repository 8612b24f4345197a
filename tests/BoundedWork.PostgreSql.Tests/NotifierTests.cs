using BoundedWork.PostgreSql.Internal;

namespace BoundedWork.PostgreSql.Tests;

/// <summary>The notifier's coalescing, without a database: its send is a gated fake.</summary>
public sealed class NotifierTests
{
    [Fact]
    public void SignalsWhileASendIsInFlight_MakeExactlyOneMoreSend_AndNoneIsLost()
    {
        using var inFlight = new SemaphoreSlim(0);
        using var proceed = new SemaphoreSlim(0);
        var sends = 0;
        using var notifier = new Notifier(() =>
        {
            Interlocked.Increment(ref sends);
            inFlight.Release();
            return proceed.Wait(QueueNode.Patience);
        }, TimeSpan.FromSeconds(1));
        using var stop = new CancellationTokenSource();
        var thread = new Thread(() => notifier.Run(stop.Token)) { IsBackground = true };
        thread.Start();

        notifier.Signal();
        Assert.True(inFlight.Wait(QueueNode.Patience)); // the first send is in flight
        for (var i = 0; i < 100; i++)
        {
            notifier.Signal();
        }

        proceed.Release();
        Assert.True(inFlight.Wait(QueueNode.Patience)); // the hundred signals made one send, after the first
        proceed.Release();

        notifier.Signal(); // after both: one more
        Assert.True(inFlight.Wait(QueueNode.Patience));
        proceed.Release();

        stop.Cancel();
        Assert.True(thread.Join(QueueNode.Patience));
        Assert.Equal(3, sends);
        Assert.Equal(3, notifier.Sent);
    }

    [Fact]
    public void FailedSend_IsTriedAgain_AndASignalGivenBeforeTheStop_IsStillSent()
    {
        var attempts = 0;
        using var sent = new SemaphoreSlim(0);
        using var proceed = new SemaphoreSlim(0);
        using var notifier = new Notifier(() =>
        {
            if (Interlocked.Increment(ref attempts) == 1)
            {
                return false; // the database is unreachable once
            }

            sent.Release();
            return proceed.Wait(QueueNode.Patience);
        }, TimeSpan.FromMilliseconds(100));
        using var stop = new CancellationTokenSource();
        var thread = new Thread(() => notifier.Run(stop.Token)) { IsBackground = true };
        thread.Start();

        notifier.Signal();
        Assert.True(sent.Wait(QueueNode.Patience)); // the second try is in flight

        // A commit signals while that send is in flight, and the node stops: its wake-up still goes out.
        notifier.Signal();
        stop.Cancel();
        proceed.Release();
        Assert.True(sent.Wait(QueueNode.Patience));
        proceed.Release();
        Assert.True(thread.Join(QueueNode.Patience));
        Assert.Equal(2, notifier.Sent);
        Assert.Equal(3, Volatile.Read(ref attempts));
    }
}
