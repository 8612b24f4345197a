namespace BoundedWork.Internal;

/// <summary>
/// The rules for each setting, shared by <see cref="BoundedExecutorOptions.GetValidationErrors"/> and
/// <see cref="BoundedExecutor.Reconfigure(BoundedExecutorSettingsChange)"/>, so both name a bad setting the same way.
/// </summary>
internal static class SettingsRules
{
    public static string? WorkerCount(int workerCount, int maxWorkerCount) =>
        workerCount < 1 ? $"WorkerCount must be at least 1 (was {workerCount})."
        : workerCount > maxWorkerCount ? $"WorkerCount ({workerCount}) must not exceed MaxWorkerCount ({maxWorkerCount})."
        : null;

    public static string? QueueCapacity(int queueCapacity) =>
        queueCapacity < 1 ? $"QueueCapacity must be at least 1 (was {queueCapacity})." : null;

    public static string? RejectionPolicy(RejectionPolicy policy) =>
        Enum.IsDefined(policy) ? null : $"RejectionPolicy '{policy}' is not one of {string.Join(", ", Enum.GetNames<RejectionPolicy>())}.";

    public static string? WaitTimeout(TimeSpan timeout) =>
        timeout != Timeout.InfiniteTimeSpan && (timeout <= TimeSpan.Zero || timeout.TotalMilliseconds > int.MaxValue)
            ? $"WaitTimeout must be positive and at most {TimeSpan.FromMilliseconds(int.MaxValue)}, or Timeout.InfiniteTimeSpan (was {timeout})."
            : null;

    public static string? Threshold(string setting, TimeSpan threshold) =>
        threshold != Timeout.InfiniteTimeSpan && (threshold <= TimeSpan.Zero || threshold.TotalMilliseconds > int.MaxValue)
            ? $"{setting} must be positive and at most {TimeSpan.FromMilliseconds(int.MaxValue)}, or Timeout.InfiniteTimeSpan to turn it off (was {threshold})."
            : null;

    public static void Add(List<string> errors, string? error)
    {
        if (error is not null)
        {
            errors.Add(error);
        }
    }
}
