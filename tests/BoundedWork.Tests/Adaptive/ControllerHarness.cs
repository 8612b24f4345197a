using BoundedWork.Internal.Adaptive;
using Microsoft.Extensions.Time.Testing;

namespace BoundedWork.Tests.Adaptive;

/// <summary>What a synthetic world shows the controller in one interval at a given worker count.</summary>
/// <param name="CompletedPerSecond">Items completed per second.</param>
/// <param name="RunTime">The mean run time.</param>
/// <param name="MinQueueWait">The interval's shortest queue wait.</param>
/// <param name="QueueLength">The queue length at the end.</param>
/// <param name="ArrivalsPerSecond">Items submitted per second.</param>
/// <param name="FailedPerSecond">Items failed per second.</param>
/// <param name="MaxBusy">The most busy workers at a look (default: all of them).</param>
internal sealed record Signals(
    double CompletedPerSecond,
    TimeSpan RunTime,
    TimeSpan MinQueueWait,
    int QueueLength,
    double ArrivalsPerSecond,
    double FailedPerSecond = 0,
    int? MaxBusy = null)
{
    /// <summary>
    /// A dependency that serves <paramref name="knee"/> calls at once in <paramref name="service"/> each, behind a
    /// queue that stands whenever <paramref name="arrivals"/> exceed what the workers do. Past the knee the run time
    /// grows with the count (the calls wait for a connection) and the throughput stays flat.
    /// </summary>
    public static Func<int, Signals> Knee(int knee, TimeSpan service, double arrivals) => count =>
    {
        var throughput = Math.Min(count, knee) / service.TotalSeconds;
        var runTime = service * Math.Max(1, count / (double)knee);
        var standing = arrivals > throughput;
        var done = Math.Min(throughput, arrivals);
        return new Signals(
            done, runTime, standing ? TimeSpan.FromMilliseconds(200) : TimeSpan.Zero, standing ? 500 : 0, arrivals,
            MaxBusy: standing ? count : Math.Min(count, (int)Math.Ceiling(arrivals * runTime.TotalSeconds)));
    };
}

/// <summary>
/// Drives an <see cref="AdaptiveController"/> interval by interval on a <see cref="FakeTimeProvider"/>: builds each
/// sample from a synthetic world at the count in force, advances the clock by the interval, and applies what the
/// controller decides (unless it only advises).
/// </summary>
internal sealed class ControllerHarness
{
    public ControllerHarness(int count, int min = 2, int max = 64, AdaptiveParameters? parameters = null)
    {
        Count = count;
        Min = min;
        Max = max;
        Parameters = parameters ?? AdaptiveParameters.Default;
        Controller = new AdaptiveController(Parameters, Clock);
    }

    public FakeTimeProvider Clock { get; } = new();

    public AdaptiveParameters Parameters { get; }

    public AdaptiveController Controller { get; }

    public int Count { get; set; }

    public int Min { get; set; }

    public int Max { get; set; }

    public List<AdaptiveDecision> Decisions { get; } = [];

    public IEnumerable<AdaptiveDecision> Changes => Decisions.Where(d => d.IsChange);

    public TimeSpan Elapsed => Clock.GetUtcNow() - Clock.Start;

    /// <summary>Lists the changes with their times, for a failure message.</summary>
    public string Describe() =>
        string.Join(Environment.NewLine, Changes.Select(d => $"{(d.Time - Clock.Start).TotalSeconds:F2} s {d}"));

    /// <summary>One interval of the world at the current count.</summary>
    public AdaptiveDecision Step(Func<int, Signals> world)
    {
        var interval = Parameters.Interval;
        Clock.Advance(interval);
        var decision = Controller.Decide(Sample(world(Count), interval));
        Decisions.Add(decision);
        if (decision.IsChange && decision.Applied)
        {
            Count = decision.NewCount;
        }

        return decision;
    }

    /// <summary>Runs the world for a while.</summary>
    public void Run(Func<int, Signals> world, TimeSpan duration)
    {
        var end = Elapsed + duration;
        while (Elapsed < end)
        {
            Step(world);
        }
    }

    /// <summary>Runs until a decision satisfies a condition, for at most <paramref name="limit"/> of simulated time.</summary>
    public AdaptiveDecision RunUntil(Func<int, Signals> world, Func<AdaptiveDecision, bool> condition, TimeSpan limit)
    {
        var end = Elapsed + limit;
        while (Elapsed < end)
        {
            var decision = Step(world);
            if (condition(decision))
            {
                return decision;
            }
        }

        Assert.Fail($"No decision met the condition within {limit}; the last was: {Decisions[^1]}");
        return null!;
    }

    public AdaptiveSample Sample(Signals s, TimeSpan interval)
    {
        var seconds = interval.TotalSeconds;
        var completed = (long)Math.Round(s.CompletedPerSecond * seconds);
        var failed = (long)Math.Round(s.FailedPerSecond * seconds);
        var busy = s.MaxBusy ?? Count;
        return new AdaptiveSample
        {
            Interval = interval,
            WorkerCount = Count,
            MinWorkerCount = Min,
            MaxWorkerCount = Max,
            Completed = completed,
            Failed = failed,
            Arrivals = (long)Math.Round(s.ArrivalsPerSecond * seconds),
            MinQueueWait = s.MinQueueWait,
            QueueLength = s.QueueLength,
            MeanBusyWorkers = busy,
            MaxBusyWorkers = busy,
            RunTime = completed > 0 ? s.RunTime : null,
        };
    }
}
