using System.Globalization;
using System.Text;
using System.Threading.RateLimiting;

namespace BoundedWork;

/// <summary>
/// The settings of a running <see cref="BoundedExecutor"/> that can change at runtime, as one immutable value. Read them
/// with <see cref="BoundedExecutor.Settings"/> and change them with <c>with</c>:
/// <c>executor.Reconfigure(executor.Settings with { WorkerCount = 16 })</c>.
/// </summary>
/// <remarks>
/// An executor starts with the settings of its <see cref="BoundedExecutorOptions"/>
/// (<see cref="BoundedExecutorOptions.ToSettings"/>); the options also hold what is fixed for its lifetime (its name,
/// <see cref="BoundedExecutorOptions.MaxWorkerCount"/>, callbacks, clock). <see cref="GetValidationErrors"/> is the one
/// validation of these settings, for the options, <see cref="BoundedExecutor.Reconfigure(BoundedExecutorSettings)"/>
/// and the admin console alike.
/// </remarks>
public sealed record BoundedExecutorSettings
{
    /// <summary>Every setting, in declaration order: its name, how to read it, copy it and check it.</summary>
    private static readonly Setting[] s_settings =
    [
        new(nameof(WorkerCount), static s => s.WorkerCount, static (s, from) => s with { WorkerCount = from.WorkerCount }, static (s, max) => CheckWorkerCount(s.WorkerCount, max)),
        new(nameof(QueueCapacity), static s => s.QueueCapacity, static (s, from) => s with { QueueCapacity = from.QueueCapacity }, static (s, _) => CheckQueueCapacity(s.QueueCapacity)),
        new(nameof(RejectionPolicy), static s => s.RejectionPolicy, static (s, from) => s with { RejectionPolicy = from.RejectionPolicy }, static (s, _) => CheckRejectionPolicy(s.RejectionPolicy)),
        new(nameof(WaitTimeout), static s => s.WaitTimeout, static (s, from) => s with { WaitTimeout = from.WaitTimeout }, static (s, _) => CheckWaitTimeout(s.WaitTimeout)),
        new(nameof(SlowItemThreshold), static s => s.SlowItemThreshold, static (s, from) => s with { SlowItemThreshold = from.SlowItemThreshold }, static (s, _) => CheckThreshold(nameof(SlowItemThreshold), s.SlowItemThreshold)),
        new(nameof(QueueWaitThreshold), static s => s.QueueWaitThreshold, static (s, from) => s with { QueueWaitThreshold = from.QueueWaitThreshold }, static (s, _) => CheckThreshold(nameof(QueueWaitThreshold), s.QueueWaitThreshold)),
        new(nameof(PermitsPerSecond), static s => s.PermitsPerSecond, static (s, from) => s with { PermitsPerSecond = from.PermitsPerSecond }, static (s, _) => CheckPermitsPerSecond(s)),
        new(nameof(PermitBurst), static s => s.PermitBurst, static (s, from) => s with { PermitBurst = from.PermitBurst }, static (s, _) => CheckPermitBurst(s.PermitBurst)),
        new(nameof(RateLimiter), static s => s.RateLimiter, static (s, from) => s with { RateLimiter = from.RateLimiter }, static (_, _) => null),
        new(nameof(AdaptiveMode), static s => s.AdaptiveMode, static (s, from) => s with { AdaptiveMode = from.AdaptiveMode }, static (s, _) => CheckAdaptiveMode(s.AdaptiveMode)),
        new(nameof(AdaptiveMinWorkerCount), static s => s.AdaptiveMinWorkerCount, static (s, from) => s with { AdaptiveMinWorkerCount = from.AdaptiveMinWorkerCount }, static (s, max) => CheckAdaptiveMinWorkerCount(s.AdaptiveMinWorkerCount, max)),
        new(nameof(FairShare), static s => s.FairShare, static (s, from) => s with { FairShare = from.FairShare }, static (s, _) => s.FairShare?.GetValidationError()),
        new(nameof(AdaptiveMaxWorkerCount), static s => s.AdaptiveMaxWorkerCount ?? (object)"the hard maximum", static (s, from) => s with { AdaptiveMaxWorkerCount = from.AdaptiveMaxWorkerCount }, static (s, max) => CheckAdaptiveMaxWorkerCount(s.AdaptiveMinWorkerCount, s.AdaptiveMaxWorkerCount, max)),
    ];

    /// <summary>The most permits per second, and the largest burst, a configured rate limit may have.</summary>
    public const int MaxPermitsPerSecond = 1_000_000;

    /// <summary>Gets the worker count the executor converges to: between 1 and <see cref="BoundedExecutor.MaxWorkerCount"/>.</summary>
    public required int WorkerCount { get; init; }

    /// <summary>
    /// Gets how many items may wait in the queue: at least 1. Lowering it below the current queue length evicts
    /// nothing: admission stops until the queue has drained below it. Raising it lets waiting producers in at once.
    /// </summary>
    public required int QueueCapacity { get; init; }

    /// <summary>Gets what happens to a new item when the queue is full; applied to items submitted from the change on.</summary>
    public required RejectionPolicy RejectionPolicy { get; init; }

    /// <summary>Gets how long the Wait policy waits for room: positive, or <see cref="Timeout.InfiniteTimeSpan"/> for no limit.</summary>
    public required TimeSpan WaitTimeout { get; init; }

    /// <summary>Gets how long an item may run before it is reported as slow: positive, or <see cref="Timeout.InfiniteTimeSpan"/> (off).</summary>
    public required TimeSpan SlowItemThreshold { get; init; }

    /// <summary>Gets how long an item may wait in the queue before it is reported: positive, or <see cref="Timeout.InfiniteTimeSpan"/> (off).</summary>
    public required TimeSpan QueueWaitThreshold { get; init; }

    /// <summary>
    /// Gets how many items per second the workers may start: 0 (the default) for no rate limit, otherwise at most
    /// <see cref="MaxPermitsPerSecond"/>. A worker takes a permit before it claims an item and waits for one, on its own
    /// thread, while none is left; the item stays queued meanwhile. The executor builds a token bucket from this and
    /// <see cref="PermitBurst"/> and replenishes it from its own watchdog thread. Must be 0 while
    /// <see cref="RateLimiter"/> is set.
    /// </summary>
    /// <value>Defaults to 0: no rate limit.</value>
    public int PermitsPerSecond { get; init; }

    /// <summary>
    /// Gets how many permits may accumulate while the executor is idle, so how many items may start at once after a
    /// pause: between 1 and <see cref="MaxPermitsPerSecond"/>. Used with <see cref="PermitsPerSecond"/> only.
    /// </summary>
    /// <value>Defaults to 1: starts are spread evenly.</value>
    public int PermitBurst { get; init; } = 1;

    /// <summary>
    /// Gets a rate limiter of your own (a <see cref="TokenBucketRateLimiter"/>, <see cref="FixedWindowRateLimiter"/>,
    /// <see cref="SlidingWindowRateLimiter"/>, one shared by several executors, or any <see cref="System.Threading.RateLimiting.RateLimiter"/>)
    /// that workers take a permit from before they start an item; <see langword="null"/> for none. The executor never
    /// disposes it. A replenishing limiter created with <c>AutoReplenishment = false</c> is replenished by the
    /// executor's watchdog thread; one that replenishes itself does so on a timer that needs the ThreadPool, so under
    /// pool starvation its permits stop coming (items wait, queued, and nothing is lost). Set either this or
    /// <see cref="PermitsPerSecond"/>, not both.
    /// </summary>
    /// <value>Defaults to <see langword="null"/>.</value>
    public RateLimiter? RateLimiter { get; init; }

    /// <summary>
    /// Gets whether the executor finds its own worker count between <see cref="AdaptiveMinWorkerCount"/> and
    /// <see cref="AdaptiveMaxWorkerCount"/> (<see cref="BoundedWork.AdaptiveMode.On"/>), only records what it would do
    /// (<see cref="BoundedWork.AdaptiveMode.Advisory"/>), or leaves the count to the operator.
    /// </summary>
    /// <value>Defaults to <see cref="BoundedWork.AdaptiveMode.Off"/>.</value>
    public AdaptiveMode AdaptiveMode { get; init; }

    /// <summary>Gets the fewest workers the adaptive mode runs: at least 1, at most <see cref="BoundedExecutor.MaxWorkerCount"/>.</summary>
    /// <value>Defaults to 1.</value>
    public int AdaptiveMinWorkerCount { get; init; } = 1;

    /// <summary>
    /// Gets the most workers the adaptive mode runs: at least <see cref="AdaptiveMinWorkerCount"/>, at most
    /// <see cref="BoundedExecutor.MaxWorkerCount"/> (the hard maximum, which nothing exceeds).
    /// </summary>
    /// <value>Defaults to <see langword="null"/>: up to <see cref="BoundedExecutor.MaxWorkerCount"/>.</value>
    public int? AdaptiveMaxWorkerCount { get; init; }

    /// <summary>
    /// Gets fair share across tenants: how items submitted for a tenant (<see cref="BoundedExecutor.ForTenant(string)"/>)
    /// are weighted and bounded. Items submitted without a tenant are not held back by it: they take their turn in
    /// arrival order, as they always do.
    /// </summary>
    /// <value><see langword="null"/>: off, and a tenant given with an item is ignored (no cost at all).</value>
    public FairShareSettings? FairShare { get; init; }

    /// <summary>
    /// Checks every setting, for an executor whose hard maximum worker count is <paramref name="maxWorkerCount"/>.
    /// </summary>
    /// <param name="maxWorkerCount">The executor's <see cref="BoundedExecutor.MaxWorkerCount"/>.</param>
    /// <returns>
    /// One message per invalid setting, naming the setting and its value, keyed by the setting's name
    /// (<c>WorkerCount</c>, <c>QueueCapacity</c>, ...); empty when every setting is valid.
    /// </returns>
    public IReadOnlyDictionary<string, string> GetValidationErrors(int maxWorkerCount)
    {
        var errors = new Dictionary<string, string>(StringComparer.Ordinal);
        AddValidationErrors(errors, maxWorkerCount);
        return errors;
    }

    /// <summary>
    /// Returns these settings with every setting that differs between <paramref name="from"/> and <paramref name="to"/>
    /// set to its value in <paramref name="to"/>; the others keep their values here. It applies a change made elsewhere
    /// on top of settings that may have changed meanwhile: a configuration reload uses it so that it changes only what
    /// changed in configuration and keeps what an operator changed at runtime.
    /// </summary>
    /// <param name="from">The settings before the change.</param>
    /// <param name="to">The settings after the change.</param>
    /// <returns>The settings with the change applied.</returns>
    /// <exception cref="ArgumentNullException"><paramref name="from"/> or <paramref name="to"/> is <see langword="null"/>.</exception>
    public BoundedExecutorSettings WithChanges(BoundedExecutorSettings from, BoundedExecutorSettings to)
    {
        ArgumentNullException.ThrowIfNull(from);
        ArgumentNullException.ThrowIfNull(to);
        var result = this;
        foreach (var setting in s_settings)
        {
            if (!Equals(setting.Read(from), setting.Read(to)))
            {
                result = setting.CopyFrom(result, to);
            }
        }

        return result;
    }

    /// <summary>Adds one message per invalid setting to <paramref name="errors"/>, keyed by the setting's name.</summary>
    internal void AddValidationErrors(Dictionary<string, string> errors, int maxWorkerCount)
    {
        foreach (var setting in s_settings)
        {
            if (setting.Check(this, maxWorkerCount) is { } error)
            {
                errors[setting.Name] = error;
            }
        }
    }

    /// <summary>The one diff: each setting whose value differs in <paramref name="other"/>, in declaration order, as <c>WorkerCount 8 -&gt; 16</c>.</summary>
    internal List<(string Setting, string Change)> Diff(BoundedExecutorSettings other)
    {
        var changes = new List<(string Setting, string Change)>();
        foreach (var setting in s_settings)
        {
            var (before, after) = (setting.Read(this), setting.Read(other));
            if (!Equals(before, after))
            {
                changes.Add((setting.Name, $"{setting.Name} {Format(before)} -> {Format(after)}"));
            }
        }

        return changes;
    }

    /// <summary>The adaptive mode's bounds in force for an executor whose hard maximum is <paramref name="maxWorkerCount"/>.</summary>
    internal (int Min, int Max) AdaptiveBounds(int maxWorkerCount)
    {
        var min = Math.Clamp(AdaptiveMinWorkerCount, 1, maxWorkerCount);
        return (min, Math.Clamp(AdaptiveMaxWorkerCount ?? maxWorkerCount, min, maxWorkerCount));
    }

    /// <summary>
    /// What <see cref="ToString"/> prints between its braces: every setting as a person reads it, in declaration order
    /// (<c>QueueWaitThreshold = off</c> for a threshold turned off, <c>WaitTimeout = infinite</c>, invariant numbers).
    /// </summary>
    private bool PrintMembers(StringBuilder builder)
    {
        for (var i = 0; i < s_settings.Length; i++)
        {
            var value = s_settings[i].Read(this);
            var text = value is TimeSpan span && span == Timeout.InfiniteTimeSpan && s_settings[i].Name.EndsWith("Threshold", StringComparison.Ordinal) ? "off" : Format(value);
            builder.Append(i == 0 ? "" : ", ").Append(s_settings[i].Name).Append(" = ").Append(text);
        }

        return true;
    }

    /// <summary>A setting's value as a person reads it in a log: invariant, and <c>infinite</c> for <see cref="Timeout.InfiniteTimeSpan"/>.</summary>
    private static string Format(object? value) => value switch
    {
        null => "none",
        RateLimiter limiter => limiter.GetType().Name,
        TimeSpan timeSpan when timeSpan == Timeout.InfiniteTimeSpan => "infinite",
        IFormattable formattable => formattable.ToString(null, CultureInfo.InvariantCulture),
        _ => value.ToString() ?? string.Empty,
    };

    private static string? CheckPermitsPerSecond(BoundedExecutorSettings s) =>
        s.PermitsPerSecond < 0 || s.PermitsPerSecond > MaxPermitsPerSecond
            ? $"PermitsPerSecond must be between 0 (no rate limit) and {MaxPermitsPerSecond} (was {s.PermitsPerSecond})."
        : s.PermitsPerSecond != 0 && s.RateLimiter is not null
            ? $"PermitsPerSecond must be 0 while a RateLimiter is set (was {s.PermitsPerSecond}): the executor uses one limiter, either its own token bucket or yours."
        : null;

    private static string? CheckPermitBurst(int burst) =>
        burst < 1 || burst > MaxPermitsPerSecond ? $"PermitBurst must be between 1 and {MaxPermitsPerSecond} (was {burst})." : null;

    private static string? CheckWorkerCount(int workerCount, int maxWorkerCount) =>
        workerCount < 1 ? $"WorkerCount must be at least 1 (was {workerCount})."
        : workerCount > maxWorkerCount ? $"WorkerCount ({workerCount}) must not exceed MaxWorkerCount ({maxWorkerCount})."
        : null;

    private static string? CheckAdaptiveMode(AdaptiveMode mode) =>
        Enum.IsDefined(mode) ? null : $"AdaptiveMode '{mode}' is not one of {string.Join(", ", Enum.GetNames<AdaptiveMode>())}.";

    private static string? CheckAdaptiveMinWorkerCount(int min, int maxWorkerCount) =>
        min < 1 ? $"AdaptiveMinWorkerCount must be at least 1 (was {min})."
        : min > maxWorkerCount && maxWorkerCount >= 1 ? $"AdaptiveMinWorkerCount ({min}) must not exceed MaxWorkerCount ({maxWorkerCount})."
        : null;

    private static string? CheckAdaptiveMaxWorkerCount(int min, int? max, int maxWorkerCount) =>
        max is not { } value ? null
        : value > maxWorkerCount && maxWorkerCount >= 1 ? $"AdaptiveMaxWorkerCount ({value}) must not exceed MaxWorkerCount ({maxWorkerCount})."
        : value < Math.Max(1, min) ? $"AdaptiveMaxWorkerCount ({value}) must be at least AdaptiveMinWorkerCount ({min}) and at least 1."
        : null;

    private static string? CheckQueueCapacity(int queueCapacity) =>
        queueCapacity < 1 ? $"QueueCapacity must be at least 1 (was {queueCapacity})." : null;

    private static string? CheckRejectionPolicy(RejectionPolicy policy) =>
        Enum.IsDefined(policy) ? null : $"RejectionPolicy '{policy}' is not one of {string.Join(", ", Enum.GetNames<RejectionPolicy>())}.";

    private static string? CheckWaitTimeout(TimeSpan timeout) =>
        timeout != Timeout.InfiniteTimeSpan && (timeout <= TimeSpan.Zero || timeout.TotalMilliseconds > int.MaxValue)
            ? $"WaitTimeout must be positive and at most {TimeSpan.FromMilliseconds(int.MaxValue)}, or Timeout.InfiniteTimeSpan (was {timeout})."
            : null;

    private static string? CheckThreshold(string setting, TimeSpan threshold) =>
        threshold != Timeout.InfiniteTimeSpan && (threshold <= TimeSpan.Zero || threshold.TotalMilliseconds > int.MaxValue)
            ? $"{setting} must be positive and at most {TimeSpan.FromMilliseconds(int.MaxValue)}, or Timeout.InfiniteTimeSpan to turn it off (was {threshold})."
            : null;

    /// <summary>One setting: adding a setting to the record means adding its property and one line to <see cref="s_settings"/>.</summary>
    private sealed record Setting(
        string Name,
        Func<BoundedExecutorSettings, object?> Read,
        Func<BoundedExecutorSettings, BoundedExecutorSettings, BoundedExecutorSettings> CopyFrom,
        Func<BoundedExecutorSettings, int, string?> Check);
}
