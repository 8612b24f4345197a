using System.Globalization;
using BoundedWork.Internal.Adaptive;

namespace BoundedWork.AdaptiveSimulation;

/// <summary>One point of a simulated run's time series.</summary>
/// <param name="Seconds">The end of the recording period.</param>
/// <param name="Workers">The target worker count.</param>
/// <param name="LiveWorkers">The workers alive (above the target while busy ones have not retired yet).</param>
/// <param name="BusyWorkers">The busy workers at the end of the period.</param>
/// <param name="QueueLength">The queue length at the end of the period.</param>
/// <param name="QueueWaitMs">The oldest queued item's age at the end of the period.</param>
/// <param name="CompletedPerSecond">Items completed per second during the period.</param>
/// <param name="RunTimeMs">The mean run time of the items finished during the period (0 if none).</param>
/// <param name="RejectedPerSecond">Items rejected (queue full) per second during the period.</param>
internal readonly record struct SimulationPoint(
    double Seconds, int Workers, int LiveWorkers, int BusyWorkers, int QueueLength, double QueueWaitMs,
    double CompletedPerSecond, double RunTimeMs, double RejectedPerSecond);

/// <summary>A simulated run: its time series, every decision the controller made, and the totals.</summary>
/// <param name="Settings">What was simulated.</param>
/// <param name="Points">The time series.</param>
/// <param name="RunTimes">Each finished item's completion time and run time, in seconds, in completion order.</param>
/// <param name="Decisions">Every decision (holds included), in order.</param>
/// <param name="Submitted">Items submitted.</param>
/// <param name="Completed">Items completed.</param>
/// <param name="Failed">Items failed.</param>
/// <param name="Rejected">Items rejected because the queue was full.</param>
internal sealed record SimulationResult(
    SimulationSettings Settings,
    IReadOnlyList<SimulationPoint> Points,
    IReadOnlyList<(double At, double RunTime)> RunTimes,
    IReadOnlyList<AdaptiveDecision> Decisions,
    long Submitted,
    long Completed,
    long Failed,
    long Rejected)
{
    /// <summary>Gets the decisions that changed (or, in advisory mode, would have changed) the count.</summary>
    public IEnumerable<AdaptiveDecision> Changes => Decisions.Where(d => d.IsChange);

    /// <summary>Gets the worker count at the end.</summary>
    public int FinalWorkers => Points.Count > 0 ? Points[^1].Workers : Settings.InitialWorkers;

    /// <summary>Completions per second between two times.</summary>
    /// <param name="from">Seconds from the start.</param>
    /// <param name="to">Seconds from the start.</param>
    /// <returns>The goodput.</returns>
    public double Goodput(double from, double to)
    {
        var window = Points.Where(p => p.Seconds > from && p.Seconds <= to).ToList();
        return window.Count == 0 ? 0 : window.Average(p => p.CompletedPerSecond);
    }

    /// <summary>A run-time percentile of the items finished between two times, in seconds.</summary>
    /// <param name="percentile">Between 0 and 1.</param>
    /// <param name="from">Seconds from the start.</param>
    /// <param name="to">Seconds from the start.</param>
    /// <returns>The percentile (0 if no item finished).</returns>
    public double RunTimePercentile(double percentile, double from, double to)
    {
        var times = RunTimes.Where(r => r.At > from && r.At <= to).Select(r => r.RunTime).Order().ToList();
        return times.Count == 0 ? 0 : times[Math.Min(times.Count - 1, (int)Math.Ceiling(percentile * times.Count) - 1)];
    }

    /// <summary>The mean target worker count between two times.</summary>
    /// <param name="from">Seconds from the start.</param>
    /// <param name="to">Seconds from the start.</param>
    /// <returns>The mean.</returns>
    public double MeanWorkers(double from, double to)
    {
        var window = Points.Where(p => p.Seconds > from && p.Seconds <= to).ToList();
        return window.Count == 0 ? 0 : window.Average(p => p.Workers);
    }

    /// <summary>The count changes made between two times.</summary>
    /// <param name="from">Seconds from the start.</param>
    /// <param name="to">Seconds from the start.</param>
    /// <returns>How many.</returns>
    public int ChangesBetween(double from, double to) =>
        Changes.Count(d => Seconds(d) > from && Seconds(d) <= to);

    /// <summary>The most count changes made in any window of the given length between two times.</summary>
    /// <param name="window">The window's length in seconds.</param>
    /// <param name="from">Seconds from the start.</param>
    /// <param name="to">Seconds from the start.</param>
    /// <returns>The most changes in one window.</returns>
    public int MostChangesInAnyWindow(double window, double from, double to)
    {
        var times = Changes.Select(Seconds).Where(s => s > from && s <= to).ToList();
        var most = 0;
        for (var i = 0; i < times.Count; i++)
        {
            most = Math.Max(most, times.Count(s => s >= times[i] && s < times[i] + window));
        }

        return most;
    }

    /// <summary>
    /// The first time, after the backlog first reached <paramref name="fromLength"/>, that it fell to
    /// <paramref name="toLength"/> or below; <see langword="null"/> if it never rose or never fell.
    /// </summary>
    /// <param name="fromLength">The backlog that counts as formed.</param>
    /// <param name="toLength">The backlog that counts as drained.</param>
    /// <returns>Seconds from the start, or <see langword="null"/>.</returns>
    public (double Formed, double Drained)? Drain(int fromLength, int toLength)
    {
        var formed = Points.FirstOrDefault(p => p.QueueLength >= fromLength);
        if (formed == default)
        {
            return null;
        }

        var drained = Points.FirstOrDefault(p => p.Seconds > formed.Seconds && p.QueueLength <= toLength);
        return drained == default ? null : (formed.Seconds, drained.Seconds);
    }

    /// <summary>Seconds from the simulation's start at which a decision was made.</summary>
    /// <param name="decision">The decision.</param>
    /// <returns>The seconds.</returns>
    public double Seconds(AdaptiveDecision decision)
    {
        ArgumentNullException.ThrowIfNull(decision);
        return (decision.Time - Simulator.Epoch).TotalSeconds;
    }

    /// <summary>Writes the time series as CSV: the columns the gnuplot scripts plot.</summary>
    /// <param name="writer">The destination.</param>
    public void WriteCsv(TextWriter writer)
    {
        ArgumentNullException.ThrowIfNull(writer);
        writer.WriteLine("seconds,workers,live_workers,busy_workers,queued,queue_wait_ms,completed_per_s,run_time_ms,rejected_per_s");
        foreach (var p in Points)
        {
            writer.WriteLine(string.Create(
                CultureInfo.InvariantCulture,
                $"{p.Seconds:F3},{p.Workers},{p.LiveWorkers},{p.BusyWorkers},{p.QueueLength},{p.QueueWaitMs:F2},{p.CompletedPerSecond:F1},{p.RunTimeMs:F3},{p.RejectedPerSecond:F1}"));
        }
    }
}

/// <summary>Collects a simulation's time series and run times.</summary>
internal sealed class SimulationRecorder(double period)
{
    private readonly double _period = period;
    private readonly List<SimulationPoint> _points = [];
    private readonly List<(double, double)> _runTimes = [];
    private double _next = period;
    private long _completedBefore;
    private long _rejectedBefore;
    private double _runTimeSum;
    private int _runTimeCount;

    public IReadOnlyList<SimulationPoint> Points => _points;

    public IReadOnlyList<(double At, double RunTime)> RunTimes => _runTimes;

    public void RunTime(double at, double runTime)
    {
        _runTimes.Add((at, runTime));
        _runTimeSum += runTime;
        _runTimeCount++;
    }

    public void Record(double now, int target, int live, int busy, int queued, double oldestWait, long completed, long rejected)
    {
        if (now < _next)
        {
            return;
        }

        _points.Add(new SimulationPoint(
            _next, target, live, busy, queued, oldestWait * 1000, (completed - _completedBefore) / _period,
            _runTimeCount > 0 ? _runTimeSum / _runTimeCount * 1000 : 0, (rejected - _rejectedBefore) / _period));
        _next += _period;
        _completedBefore = completed;
        _rejectedBefore = rejected;
        _runTimeSum = 0;
        _runTimeCount = 0;
    }
}
