using System.Diagnostics;
using Microsoft.Extensions.DependencyInjection;

namespace BoundedWork.Hosting.Tests;

public sealed class TracingTests
{
    [Fact]
    public async Task RunActivity_HasTheSubmittingActivityAsParent()
    {
        var executorName = "traced-" + Guid.NewGuid().ToString("N");
        var stopped = new TaskCompletionSource<Activity>(TaskCreationOptions.RunContinuationsAsynchronously);
        using var listener = new ActivityListener
        {
            ShouldListenTo = source => source.Name == BoundedWorkDiagnostics.ActivitySourceName,
            Sample = (ref ActivityCreationOptions<ActivityContext> _) => ActivitySamplingResult.AllDataAndRecorded,
            ActivityStopped = activity =>
            {
                if (Equals(activity.GetTagItem(BoundedWorkDiagnostics.ExecutorTag), executorName))
                {
                    stopped.TrySetResult(activity);
                }
            },
        };
        ActivitySource.AddActivityListener(listener);
        var builder = TestHost.CreateBuilder();
        builder.Services.AddBoundedExecutor(executorName, o => o.WorkerCount = 1);
        using var host = builder.Build();
        await host.StartAsync();
        var executor = host.Services.GetRequiredKeyedService<BoundedExecutor>(executorName);

        using (var submitting = new Activity("HandlePaymentCallback").Start())
        {
            executor.Execute(() => { });
            var run = await stopped.Task.WaitAsync(TestHost.Patience);

            Assert.Equal(BoundedWorkDiagnostics.RunActivityName, run.OperationName);
            Assert.Equal(ActivityKind.Internal, run.Kind);
            Assert.Equal(submitting.SpanId, run.ParentSpanId);
            Assert.Equal(submitting.TraceId, run.TraceId);
        }

        await host.StopAsync();
    }
}
