using Microsoft.Extensions.Options;

namespace PaymentCallbacks.Server;

/// <summary>
/// The simulated slow dependency behind each callback's side effect (configuration section <c>SideEffect</c>).
/// Each call blocks its thread for a random delay between <see cref="MinDelayMs"/> and <see cref="MaxDelayMs"/>
/// (a synchronous Redis or mail call), then does a little CPU work.
/// </summary>
internal sealed class SideEffectOptions
{
    /// <summary>The configuration section.</summary>
    public const string Section = "SideEffect";

    /// <summary>Gets or sets the shortest blocking delay, in milliseconds.</summary>
    /// <value>Defaults to 1.</value>
    public int MinDelayMs { get; set; } = 1;

    /// <summary>Gets or sets the longest blocking delay, in milliseconds (the "slow dependency" setting is 50/50).</summary>
    /// <value>Defaults to 5.</value>
    public int MaxDelayMs { get; set; } = 5;

    /// <summary>Gets or sets how many SHA-256 hashes of a 256-byte buffer each call computes (the CPU part).</summary>
    /// <value>Defaults to 20 (a few tens of microseconds).</value>
    public int CpuIterations { get; set; } = 20;

    /// <summary>Lists what is wrong with these settings, naming each setting.</summary>
    /// <returns>The errors; empty when valid.</returns>
    public IEnumerable<string> Validate()
    {
        if (MinDelayMs < 0)
        {
            yield return $"{Section}:{nameof(MinDelayMs)} ({MinDelayMs}) must not be negative.";
        }

        if (MaxDelayMs < MinDelayMs)
        {
            yield return $"{Section}:{nameof(MaxDelayMs)} ({MaxDelayMs}) must be at least {nameof(MinDelayMs)} ({MinDelayMs}).";
        }

        if (CpuIterations < 0)
        {
            yield return $"{Section}:{nameof(CpuIterations)} ({CpuIterations}) must not be negative.";
        }
    }
}

/// <summary>Fails start-up with a message per bad <see cref="SideEffectOptions"/> setting.</summary>
internal sealed class SideEffectOptionsValidator : IValidateOptions<SideEffectOptions>
{
    /// <inheritdoc />
    public ValidateOptionsResult Validate(string? name, SideEffectOptions options)
    {
        ArgumentNullException.ThrowIfNull(options);
        var errors = options.Validate().ToList();
        return errors.Count == 0 ? ValidateOptionsResult.Success : ValidateOptionsResult.Fail(errors);
    }
}
