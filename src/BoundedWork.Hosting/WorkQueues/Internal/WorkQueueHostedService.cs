using Microsoft.Extensions.Hosting;

namespace BoundedWork.Hosting.Internal;

/// <summary>
/// Starts one work queue with the host and, once every executor has stopped (<see cref="StoppedAsync"/> runs after
/// all hosted services' <c>StopAsync</c>), ends its retry waits and waits for its dead letters.
/// </summary>
internal sealed class WorkQueueHostedService<T>(WorkQueue<T> queue) : IHostedLifecycleService
{
    public Task StartingAsync(CancellationToken cancellationToken) => Task.CompletedTask;

    public Task StartAsync(CancellationToken cancellationToken)
    {
        queue.Start();
        return Task.CompletedTask;
    }

    public Task StartedAsync(CancellationToken cancellationToken) => Task.CompletedTask;

    public Task StoppingAsync(CancellationToken cancellationToken) => Task.CompletedTask;

    public Task StopAsync(CancellationToken cancellationToken) => Task.CompletedTask;

    public Task StoppedAsync(CancellationToken cancellationToken) => queue.StopAsync(cancellationToken);
}
