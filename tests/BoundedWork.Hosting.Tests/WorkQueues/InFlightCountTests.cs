using BoundedWork.Hosting.Internal;

namespace BoundedWork.Hosting.Tests.WorkQueues;

/// <summary>
/// The stop handshake of a typed queue on its own: a stopper that starts waiting while the last item finishes must
/// always be woken.
/// </summary>
public sealed class InFlightCountTests
{
    [Fact]
    public void WhenIdle_RacingTheLastDecrement_IsNeverLeftWaiting()
    {
        // Two threads meet at a spin barrier before each round, so the stopper's publish-then-read and the finisher's
        // decrement-then-read run at the same moment on two cores; a varying spin on one side shifts their alignment
        // from round to round. Bounded by the round count, not by time.
        const int Rounds = 200_000;
        var barrier = new SpinBarrier();
        var counts = new InFlightCount[Rounds];
        var idle = new Task[Rounds];
        for (var i = 0; i < Rounds; i++)
        {
            counts[i] = new InFlightCount();
            counts[i].Increment();
        }

        var stopper = new Thread(() =>
        {
            for (var i = 0; i < Rounds; i++)
            {
                barrier.Arrive();
                Thread.SpinWait(i % 7);
                idle[i] = counts[i].WhenIdle();
            }
        });
        var finisher = new Thread(() =>
        {
            for (var i = 0; i < Rounds; i++)
            {
                barrier.Arrive();
                counts[i].Decrement();
            }
        });

        stopper.Start();
        finisher.Start();
        stopper.Join();
        finisher.Join();

        // Both sides of every round are done and every count is zero: every signal must be complete.
        var missed = idle.Count(task => !task.IsCompleted);
        Assert.True(missed == 0, $"{missed} of {Rounds} stoppers were left waiting with nothing in flight.");
    }

    [Fact]
    public async Task WhenIdle_CalledTwice_BothCallsCompleteWithTheLastDecrement()
    {
        var count = new InFlightCount();
        count.Increment();

        var first = count.WhenIdle();
        var second = count.WhenIdle();
        Assert.False(first.IsCompleted);

        count.Decrement();

        await first.WaitAsync(TestHost.Patience);
        await second.WaitAsync(TestHost.Patience);
        Assert.Equal(0, count.Value);
    }

    /// <summary>Two threads wait for each other before each round; spins (yielding when the other thread is not running).</summary>
    private sealed class SpinBarrier
    {
        private int _arrivals;

        [ThreadStatic]
        private static int t_round;

        public void Arrive()
        {
            var target = 2 * ++t_round;
            Interlocked.Increment(ref _arrivals);
            var spinner = default(SpinWait);
            while (Volatile.Read(ref _arrivals) < target)
            {
                spinner.SpinOnce(sleep1Threshold: -1);
            }
        }
    }
}
