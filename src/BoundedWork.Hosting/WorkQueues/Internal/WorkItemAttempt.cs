using Microsoft.Extensions.DependencyInjection;

namespace BoundedWork.Hosting.Internal;

/// <summary>One call of a queue's handler: which item, which attempt.</summary>
internal readonly record struct WorkItemAttempt(string QueueName, long ItemId, int Attempt, DateTimeOffset EnqueuedAt, bool IsDurable)
{
    /// <summary>
    /// Runs the handler in a new scope on the current thread, with the scope's <see cref="WorkItemContext"/> filled in.
    /// </summary>
    /// <returns>The handler's exception, or <see langword="null"/> when it succeeded.</returns>
    public static Exception? Run<T>(IServiceScopeFactory scopes, Action<IServiceProvider, T, CancellationToken> handle, T item, WorkItemAttempt attempt, CancellationToken cancellationToken)
    {
        try
        {
            var scope = scopes.CreateAsyncScope();
            try
            {
                if (scope.ServiceProvider.GetService<WorkItemContext>() is { } context)
                {
                    context.QueueName = attempt.QueueName;
                    context.ItemId = attempt.ItemId;
                    context.Attempt = attempt.Attempt;
                    context.EnqueuedAt = attempt.EnqueuedAt;
                    context.IsDurable = attempt.IsDurable;
                }

                handle(scope.ServiceProvider, item, cancellationToken);
            }
            finally
            {
                var disposal = scope.DisposeAsync();
                if (!disposal.IsCompletedSuccessfully)
                {
                    disposal.AsTask().GetAwaiter().GetResult();
                }
            }

            return null;
        }
        catch (Exception ex)
        {
            return ex;
        }
    }
}
