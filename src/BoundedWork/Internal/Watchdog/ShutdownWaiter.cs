namespace BoundedWork.Internal;

/// <summary>
/// A caller of a shutdown with a deadline, as a timestamp of the executor's clock. The watchdog thread completes it
/// at the deadline; the last worker to exit completes it earlier. Continuations run asynchronously, so neither
/// thread ever runs the caller's code.
/// </summary>
internal sealed class ShutdownWaiter(long deadline) : TaskCompletionSource<ShutdownResult>(TaskCreationOptions.RunContinuationsAsynchronously)
{
    public long Deadline { get; } = deadline;
}
