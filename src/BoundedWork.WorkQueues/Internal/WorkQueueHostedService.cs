using Microsoft.Extensions.Hosting;

namespace BoundedWork.Hosting.Internal;

/// <summary>
/// Starts one work queue with the host. Before the executors stop (<see cref="StoppingAsync"/> runs before every
/// hosted service's <c>StopAsync</c>) a durable queue stops claiming; once every executor has stopped
/// (<see cref="StoppedAsync"/>) the queue finishes what is in flight.
/// </summary>
internal sealed class WorkQueueHostedService<T>(IWorkQueueRuntime<T> queue) : IHostedLifecycleService
{
    public Task StartingAsync(CancellationToken cancellationToken) => Task.CompletedTask;

    public Task StartAsync(CancellationToken cancellationToken) => queue.StartAsync(cancellationToken);

    public Task StartedAsync(CancellationToken cancellationToken) => Task.CompletedTask;

    public Task StoppingAsync(CancellationToken cancellationToken) => queue.StoppingAsync(cancellationToken);

    public Task StopAsync(CancellationToken cancellationToken) => Task.CompletedTask;

    public Task StoppedAsync(CancellationToken cancellationToken) => queue.StoppedAsync(cancellationToken);
}
