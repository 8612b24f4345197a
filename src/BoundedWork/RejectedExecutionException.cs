namespace BoundedWork;

/// <summary>
/// Thrown (or set on a returned task) when a <see cref="BoundedExecutor"/> does not accept or does not run an item.
/// </summary>
public sealed class RejectedExecutionException : Exception
{
    /// <summary>Creates an exception with a generic message.</summary>
    public RejectedExecutionException()
        : this("The work item was rejected.")
    {
    }

    /// <summary>Creates an exception with the given message.</summary>
    /// <param name="message">The message.</param>
    public RejectedExecutionException(string message)
        : base(message)
    {
        ExecutorName = string.Empty;
    }

    /// <summary>Creates an exception with the given message and inner exception.</summary>
    /// <param name="message">The message.</param>
    /// <param name="innerException">The exception that caused this one.</param>
    public RejectedExecutionException(string message, Exception innerException)
        : base(message, innerException)
    {
        ExecutorName = string.Empty;
    }

    /// <summary>Creates an exception that names the executor and the reason.</summary>
    /// <param name="executorName">The name of the executor that rejected the item.</param>
    /// <param name="reason">Why the item was rejected.</param>
    public RejectedExecutionException(string executorName, RejectionReason reason)
        : base(CreateMessage(executorName, reason))
    {
        ExecutorName = executorName;
        Reason = reason;
    }

    /// <summary>Gets the name of the executor that rejected the item.</summary>
    public string ExecutorName { get; }

    /// <summary>Gets why the item was rejected.</summary>
    public RejectionReason Reason { get; }

    private static string CreateMessage(string executorName, RejectionReason reason) => reason switch
    {
        RejectionReason.QueueFull => $"Executor '{executorName}' rejected the work item: its queue is full.",
        RejectionReason.WaitTimedOut => $"Executor '{executorName}' rejected the work item: its queue stayed full for the whole wait timeout.",
        RejectionReason.ShutDown => $"Executor '{executorName}' rejected the work item: it has been shut down.",
        RejectionReason.Discarded => $"Executor '{executorName}' discarded the work item: its queue is full.",
        RejectionReason.Evicted => $"Executor '{executorName}' evicted the queued work item to make room for a newer one.",
        RejectionReason.Abandoned => $"Executor '{executorName}' abandoned the queued work item at its shutdown deadline.",
        RejectionReason.TenantLimit => $"Executor '{executorName}' rejected the work item: its tenant already holds as many queued items as FairShare.MaxQueuedPerTenant allows.",
        RejectionReason.CallerRunsTooDeep => $"Executor '{executorName}' rejected the work item: its queue is full and the submitting thread is already nested too deeply in items it runs itself.",
        _ => $"Executor '{executorName}' rejected the work item ({reason}).",
    };
}
