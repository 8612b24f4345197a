using BoundedWork.Hosting;

namespace PaymentCallbacks.Server;

/// <summary>
/// The payment service's nightly reconciliation: at 02:00 Berlin time, on a worker of the side-effect executor (never
/// on the shared ThreadPool), it compares the callbacks received with those whose side effects completed or were
/// refused, and logs the day's totals. A real service would reconcile its settlement file here, a blocking call.
/// </summary>
/// <remarks>
/// A run still going at the next tick makes that tick skip (counted); <c>bw schedules</c> and
/// <c>GET /bounded-work/schedules</c> show its next and last run and last outcome, and <c>bw schedules trigger
/// nightly-reconciliation</c> runs it now.
/// </remarks>
internal sealed partial class NightlyReconciliation(CallbackCounters counters, ILogger<NightlyReconciliation> logger) : IRecurringHandler
{
    public const string Name = "nightly-reconciliation";

    public void Run(RecurringTickContext context)
    {
        var bounded = counters.Bounded;
        Reconciled(logger, context.ScheduledAt, bounded.Received, bounded.Completed, bounded.Rejected, bounded.Received - bounded.Completed - bounded.Rejected);
    }

    [LoggerMessage(Level = LogLevel.Information,
        Message = "Reconciliation for {ScheduledAt:O}: {Received} callbacks received, {Completed} completed, {Rejected} refused, {Open} still open.")]
    private static partial void Reconciled(ILogger logger, DateTimeOffset scheduledAt, long received, long completed, long rejected, long open);
}
