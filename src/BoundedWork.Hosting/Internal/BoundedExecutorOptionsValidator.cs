using Microsoft.Extensions.Options;

namespace BoundedWork.Hosting.Internal;

/// <summary>
/// Validates a registered executor's options: every value configuration could not convert
/// (<see cref="ExecutorOptionsBinding"/>), and every setting out of range
/// (<see cref="BoundedExecutorOptions.GetValidationErrors"/>), each message naming the executor and the setting.
/// </summary>
/// <remarks>
/// It decides until the executor runs: start-up (with <c>ValidateOnStart</c>) and the first resolution fail with an
/// <see cref="OptionsValidationException"/> listing every bad setting. Once the executor runs, a reload is judged by the
/// registry's change handler with the same <see cref="GetFailures"/>, which keeps the last good options: were this
/// validator to fail a reload, the options monitor would throw out of the configuration reload (on a file watcher's
/// thread, that ends the process) and answer nothing afterwards.
/// </remarks>
internal sealed class BoundedExecutorOptionsValidator(IEnumerable<BoundedExecutorRegistration> registrations, LastGoodOptionsStore running)
    : IValidateOptions<BoundedExecutorOptions>
{
    private readonly BoundedExecutorRegistration[] _registrations = [.. registrations];

    /// <summary>Every failure of <paramref name="options"/>, each prefixed with the executor's name; empty when they are valid.</summary>
    public static List<string> GetFailures(string name, BoundedExecutorOptions options)
    {
        var failures = new List<string>();
        var unconvertible = new HashSet<string>(StringComparer.Ordinal);
        foreach (var failure in ExecutorOptionsBinding.GetFailures(options))
        {
            failures.Add($"Executor '{name}': {failure.Message}");
            unconvertible.Add(failure.Setting);
        }

        foreach (var (setting, error) in options.GetValidationErrors())
        {
            // A setting that did not convert kept a stand-in value: do not report that value as well (the worker
            // count is checked against the maximum, so it is left out when the maximum did not convert either).
            var standIn = unconvertible.Contains(setting)
                || (setting == nameof(BoundedExecutorOptions.WorkerCount) && unconvertible.Contains(nameof(BoundedExecutorOptions.MaxWorkerCount)));
            if (!standIn)
            {
                failures.Add($"Executor '{name}': {error}");
            }
        }

        return failures;
    }

    public ValidateOptionsResult Validate(string? name, BoundedExecutorOptions options)
    {
        if (name is null || BoundedExecutorRegistration.Find(_registrations, name) is null || running.Contains(name))
        {
            return ValidateOptionsResult.Skip;
        }

        var failures = GetFailures(name, options);
        return failures.Count == 0 ? ValidateOptionsResult.Success : ValidateOptionsResult.Fail(failures);
    }
}
