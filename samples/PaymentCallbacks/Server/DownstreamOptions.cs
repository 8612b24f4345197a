using Microsoft.Extensions.Options;

namespace PaymentCallbacks.Server;

/// <summary>
/// A dependency of limited capacity behind the side effect (configuration section <c>Downstream</c>), such as a
/// database with <see cref="Capacity"/> connections: up to that many calls at once each take the side effect's delay;
/// a call beyond waits for a free connection, so past the knee more concurrency adds run time, not throughput. Off
/// (the plain slow dependency) while <see cref="Capacity"/> is 0.
/// </summary>
internal sealed class DownstreamOptions
{
    /// <summary>The configuration section.</summary>
    public const string Section = "Downstream";

    /// <summary>Gets or sets how many calls the dependency serves at once (its knee); 0 for no limit.</summary>
    /// <value>Defaults to 0 (the plain slow dependency).</value>
    public int Capacity { get; set; }

    /// <summary>
    /// Gets or sets how much each call beyond the capacity slows the calls being served: a call's delay is multiplied by
    /// <c>1 + ContentionPenalty x (calls - Capacity) / Capacity</c> for the calls in the dependency when it is served
    /// (a server that thrashes under too many clients). 0: waiting calls cost the others nothing.
    /// </summary>
    /// <value>Defaults to 0.</value>
    public double ContentionPenalty { get; set; }

    /// <summary>
    /// Gets or sets the slowest the dependency drifts to, as a multiple of its delay: over each
    /// <see cref="DriftPeriodSeconds"/> the delay rises from 1x to this and back. 1: no drift.
    /// </summary>
    /// <value>Defaults to 1.</value>
    public double DriftFactor { get; set; } = 1;

    /// <summary>Gets or sets the period of the drift, in seconds from the server's start.</summary>
    /// <value>Defaults to 240.</value>
    public double DriftPeriodSeconds { get; set; } = 240;

    /// <summary>Gets the delay's multiplier at a time: a triangle wave from 1 to <see cref="DriftFactor"/> and back.</summary>
    /// <param name="seconds">Seconds since the server started.</param>
    /// <returns>The multiplier.</returns>
    public double SpeedFactor(double seconds)
    {
        var phase = (seconds / DriftPeriodSeconds) % 1;
        return 1 + ((DriftFactor - 1) * (phase < 0.5 ? phase * 2 : (1 - phase) * 2));
    }

    /// <summary>Lists what is wrong with these settings, naming each setting.</summary>
    /// <returns>The errors; empty when valid.</returns>
    public IEnumerable<string> Validate()
    {
        if (Capacity < 0)
        {
            yield return $"{Section}:{nameof(Capacity)} ({Capacity}) must not be negative (0: no limit).";
        }

        if (!(ContentionPenalty >= 0 && ContentionPenalty <= 100))
        {
            yield return $"{Section}:{nameof(ContentionPenalty)} ({ContentionPenalty}) must be between 0 and 100.";
        }

        if (!(DriftFactor >= 1 && DriftFactor <= 100))
        {
            yield return $"{Section}:{nameof(DriftFactor)} ({DriftFactor}) must be between 1 and 100.";
        }

        if (!(DriftPeriodSeconds >= 1 && DriftPeriodSeconds <= 86_400))
        {
            yield return $"{Section}:{nameof(DriftPeriodSeconds)} ({DriftPeriodSeconds}) must be between 1 and 86400.";
        }
    }
}

/// <summary>Fails start-up with a message per bad <see cref="DownstreamOptions"/> setting.</summary>
internal sealed class DownstreamOptionsValidator : IValidateOptions<DownstreamOptions>
{
    /// <inheritdoc />
    public ValidateOptionsResult Validate(string? name, DownstreamOptions options)
    {
        ArgumentNullException.ThrowIfNull(options);
        var errors = options.Validate().ToList();
        return errors.Count == 0 ? ValidateOptionsResult.Success : ValidateOptionsResult.Fail(errors);
    }
}
