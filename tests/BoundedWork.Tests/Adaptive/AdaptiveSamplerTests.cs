using BoundedWork.Internal.Adaptive;
using Microsoft.Extensions.Time.Testing;

namespace BoundedWork.Tests.Adaptive;

/// <summary>The watchdog's looks turned into per-interval samples: no clock read per item, only counters and gauges.</summary>
public sealed class AdaptiveSamplerTests
{
    private readonly FakeTimeProvider _clock = new();

    [Fact]
    public void Observe_LooksAcrossAnInterval_SampleHasDifferencesMinimaAndLittlesLawRunTime()
    {
        var sampler = new AdaptiveSampler(AdaptiveParameters.Default with { Interval = TimeSpan.FromSeconds(1) }, _clock);
        AdaptiveSample sample = default;

        // Ten looks 100 ms apart: 4 workers busy throughout, 40 items completed per look (10 ms each), the oldest
        // queued item 50 ms old except at one look where it is 20 ms.
        var ended = false;
        for (var look = 0; look <= 10; look++)
        {
            ended = sampler.Observe(Reading(look, completed: 40 * look, busy: 4, oldest: look == 6 ? 20 : 50, submitted: 45 * look), out sample);
            Assert.Equal(look == 10, ended);
            _clock.Advance(TimeSpan.FromMilliseconds(100));
        }

        Assert.True(ended);
        Assert.Equal(TimeSpan.FromSeconds(1), sample.Interval);
        Assert.Equal(400, sample.Completed);
        Assert.Equal(450, sample.Arrivals);
        Assert.Equal(TimeSpan.FromMilliseconds(20), sample.MinQueueWait);
        Assert.Equal(4, sample.MaxBusyWorkers);
        Assert.Equal(4, sample.MeanBusyWorkers, 6);
        Assert.Equal(10, sample.RunTime!.Value.TotalMilliseconds, 3);
        Assert.Equal(16, sample.WorkerCount);
        Assert.Equal(12, sample.IdleWorkers);
    }

    [Fact]
    public void Observe_QueueEmptyAtOneLook_MinQueueWaitIsZero()
    {
        var sampler = new AdaptiveSampler(AdaptiveParameters.Default with { Interval = TimeSpan.FromMilliseconds(300), MinItemsPerInterval = 1 }, _clock);
        AdaptiveSample sample = default;
        for (var look = 0; look <= 3; look++)
        {
            sampler.Observe(Reading(look, completed: 10 * look, busy: 2, oldest: look == 2 ? 0 : 500), out sample);
            _clock.Advance(TimeSpan.FromMilliseconds(100));
        }

        Assert.Equal(TimeSpan.Zero, sample.MinQueueWait);
    }

    [Fact]
    public void Observe_FastFailures_AreChargedToCompletedItemsNeverReadAsFast()
    {
        var sampler = new AdaptiveSampler(AdaptiveParameters.Default with { Interval = TimeSpan.FromSeconds(1) }, _clock);
        AdaptiveSample sample = default;

        // 4 busy workers; 100 completed and 900 failed per second.
        for (var look = 0; look <= 10; look++)
        {
            sampler.Observe(Reading(look, completed: 10 * look, busy: 4, oldest: 0, failed: 90 * look), out sample);
            _clock.Advance(TimeSpan.FromMilliseconds(100));
        }

        Assert.Equal(900, sample.Failed);
        Assert.Equal(40, sample.RunTime!.Value.TotalMilliseconds, 3); // 4 busy / 100 completed per second, not 4 ms
    }

    [Fact]
    public void Observe_TooFewItems_ExtendsTheIntervalUntilEnoughOrTheLongest()
    {
        var parameters = AdaptiveParameters.Default with { Interval = TimeSpan.FromMilliseconds(250), MaxInterval = TimeSpan.FromSeconds(2), MinItemsPerInterval = 20 };
        var sampler = new AdaptiveSampler(parameters, _clock);
        AdaptiveSample sample = default;
        var look = 0;

        // One item per 100 ms look: 20 items take 2 s, which is also the longest interval.
        while (!sampler.Observe(Reading(look, completed: look, busy: 1, oldest: 0), out sample))
        {
            look++;
            _clock.Advance(TimeSpan.FromMilliseconds(100));
        }

        Assert.Equal(20, look);
        Assert.Equal(TimeSpan.FromSeconds(2), sample.Interval);

        // Nothing finishes at all: the interval ends at the longest anyway, its run time unknown.
        var idleFrom = look;
        while (!sampler.Observe(Reading(look, completed: idleFrom, busy: 0, oldest: 0), out sample))
        {
            look++;
            _clock.Advance(TimeSpan.FromMilliseconds(100));
        }

        Assert.Equal(TimeSpan.FromSeconds(2), sample.Interval);
        Assert.Null(sample.RunTime);
        Assert.Equal(0, sample.Completed);
    }

    [Fact]
    public void Observe_CounterGoesBackwards_RestartsTheIntervalWithoutASample()
    {
        var sampler = new AdaptiveSampler(AdaptiveParameters.Default with { Interval = TimeSpan.FromMilliseconds(200), MinItemsPerInterval = 1 }, _clock);
        Assert.False(sampler.Observe(Reading(0, completed: 1_000, busy: 1, oldest: 0), out _));
        _clock.Advance(TimeSpan.FromMilliseconds(300));

        Assert.False(sampler.Observe(Reading(3, completed: 10, busy: 1, oldest: 0), out _));
        _clock.Advance(TimeSpan.FromMilliseconds(300));
        Assert.True(sampler.Observe(Reading(6, completed: 40, busy: 1, oldest: 0), out var sample));

        Assert.Equal(30, sample.Completed);
    }

    private AdaptiveReading Reading(int look, long completed, int busy, int oldest, long failed = 0, long submitted = 0) => new(
        _clock.GetTimestamp(), completed, failed, submitted, 0, busy, 16, oldest > 0 ? 100 : 0, TimeSpan.FromMilliseconds(oldest), 2, 64);
}
