using Microsoft.Extensions.DependencyInjection;

namespace BoundedWork.Hosting.Internal;

/// <summary>One call of a queue's handler: which item, which attempt.</summary>
/// <remarks>A durable item also carries the producer's stored trace context (<see cref="WorkItemContext.TraceParent"/>).</remarks>
internal readonly record struct WorkItemAttempt(string QueueName, long ItemId, int Attempt, DateTimeOffset EnqueuedAt, bool IsDurable, string? TraceParent = null, string? TraceState = null)
{
    /// <summary>
    /// Runs the handler in a new scope on the current thread, with the scope's <see cref="WorkItemContext"/> filled in,
    /// then disposes the scope.
    /// </summary>
    /// <returns>The handler's exception, or <see langword="null"/> when it succeeded.</returns>
    /// <remarks>
    /// The attempt's outcome is the handler's alone. A scoped service whose disposal throws is reported
    /// (<see cref="WorkQueueDiagnostics.ScopeDisposeFailed"/>) and does not fail the attempt: a failed attempt is
    /// retried or dead-lettered, and an item whose handler succeeded must not run again or be reported unhandled.
    /// </remarks>
    public static Exception? Run<T>(IServiceScopeFactory scopes, Action<IServiceProvider, T, CancellationToken> handle, T item, WorkItemAttempt attempt, CancellationToken cancellationToken)
    {
        AsyncServiceScope scope;
        try
        {
            scope = scopes.CreateAsyncScope();
        }
        catch (Exception ex)
        {
            return ex;
        }

        Exception? failure = null;
        WorkQueueDiagnostics? diagnostics = null;
        try
        {
            // Resolved before the handler runs: once disposal has failed, the scope can resolve nothing.
            diagnostics = scope.ServiceProvider.GetRequiredService<WorkQueueDiagnostics>();
            if (scope.ServiceProvider.GetService<WorkItemContext>() is { } context)
            {
                context.QueueName = attempt.QueueName;
                context.ItemId = attempt.ItemId;
                context.Attempt = attempt.Attempt;
                context.EnqueuedAt = attempt.EnqueuedAt;
                context.IsDurable = attempt.IsDurable;
                context.TraceParent = attempt.TraceParent;
                context.TraceState = attempt.TraceState;
            }

            handle(scope.ServiceProvider, item, cancellationToken);
        }
        catch (HandlerUnavailableException ex)
        {
            failure = ex;
            diagnostics?.HandlerUnavailable(attempt, ex);
        }
        catch (Exception ex)
        {
            failure = ex;
        }

        try
        {
            var disposal = scope.DisposeAsync();
            if (!disposal.IsCompletedSuccessfully)
            {
                disposal.AsTask().GetAwaiter().GetResult();
            }
        }
        catch (Exception ex)
        {
            if (diagnostics is not null)
            {
                diagnostics.ScopeDisposeFailed(attempt, ex);
            }
            else
            {
                // The scope could not even resolve the diagnostics: the attempt has failed already; keep both errors.
                failure = failure is null ? ex : new AggregateException(failure, ex);
            }
        }

        return failure;
    }
}
