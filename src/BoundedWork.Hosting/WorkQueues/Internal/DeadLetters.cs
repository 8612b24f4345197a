using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Logging;

namespace BoundedWork.Hosting.Internal;

/// <summary>Delivers a queue's dead letters to every registered <see cref="IDeadLetterHandler{T}"/>, or logs them when there is none.</summary>
internal sealed class DeadLetters<T>(string queueName, IServiceScopeFactory scopes, ILogger logger)
{
    /// <summary>Delivers one dead letter in its own scope; never throws (a failing handler is logged with the item).</summary>
    public async Task DeliverAsync(DeadLetter<T> letter)
    {
        try
        {
            var scope = scopes.CreateAsyncScope();
            await using (scope.ConfigureAwait(false))
            {
                var delivered = false;
                foreach (var handler in scope.ServiceProvider.GetServices<IDeadLetterHandler<T>>())
                {
                    delivered = true;
                    try
                    {
                        await handler.HandleAsync(letter, CancellationToken.None).ConfigureAwait(false);
                    }
                    catch (Exception ex)
                    {
                        logger.DeadLetterHandlerFailed(queueName, letter.Reason, letter.Item, ex);
                    }
                }

                if (!delivered)
                {
                    logger.DeadLettered(queueName, letter.Reason, letter.RejectionReason, letter.Attempts, (object?)letter.Item ?? letter.Payload, letter.Exception);
                }
            }
        }
        catch (Exception ex)
        {
            // The container is gone (a dead letter after the host stopped, say): the log line still carries the item.
            logger.DeadLetterHandlerFailed(queueName, letter.Reason, letter.Item, ex);
        }
    }
}
