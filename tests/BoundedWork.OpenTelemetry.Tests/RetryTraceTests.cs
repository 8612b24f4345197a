using System.Diagnostics;
using BoundedWork.Hosting;
using BoundedWork.OpenTelemetry.TestConsumer;
using BoundedWork.PostgreSql;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Hosting;
using Microsoft.Extensions.Logging;
using OpenTelemetry.Trace;

namespace BoundedWork.OpenTelemetry.Tests;

/// <summary>Every delivery of a durable item, stored retries and a requeued dead letter included, joins the producer's trace.</summary>
[Collection(TelemetryCollection.Name)]
public sealed class RetryTraceTests(PostgresFixture postgres)
{
    private const string Queue = "flaky";

    [Fact]
    public async Task RetryDeadLetterAndRequeue_EachDeliveryIsAProcessSpan_UnderTheSameSendSpan()
    {
        var exported = new List<Activity>();
        var deliveries = new Deliveries();
        var builder = Host.CreateApplicationBuilder();
        builder.Logging.ClearProviders();
        builder.Services.AddSingleton(deliveries);
        builder.Services.AddOpenTelemetry().WithTracing(tracing => tracing.AddBoundedWorkInstrumentation().AddInMemoryExporter(exported));
        builder.Services
            .AddWorkQueue<Callback, FlakyHandler>(Queue, o =>
            {
                o.MaxRetryAttempts = 1;
                o.RetryDelay = TimeSpan.FromMilliseconds(10);
            })
            .UsePostgreSql(postgres.ConnectionString, CallbackJson.Default.Callback, o =>
            {
                o.Schema = PostgresFixture.NewSchema();
                o.PollInterval = TimeSpan.FromMilliseconds(50);
            });

        long id;
        using (var host = builder.Build())
        {
            await host.StartAsync();
            try
            {
                var queue = host.Services.GetRequiredKeyedService<IPostgreSqlWorkQueue<Callback>>(Queue);
                id = await queue.EnqueueWithIdAsync(new Callback("order-7"));
                await deliveries.Failed.WaitAsync(TracedConsumerProcess.Patience);

                // The second failure made it a dead letter; requeued once its outcome is recorded, it succeeds.
                using var deadline = new CancellationTokenSource(TracedConsumerProcess.Patience);
                while (await queue.RequeueDeadLettersAsync(DeadLetterSelection.ByIds([id]), deadline.Token) == 0)
                {
                    await Task.Delay(20, deadline.Token); // the poll's interval, up to the patience
                }

                await deliveries.Succeeded.WaitAsync(TracedConsumerProcess.Patience);
            }
            finally
            {
                await host.StopAsync(); // drains the executor: every delivery's span has ended
            }
        }

        var send = Assert.Single(exported, span => span.Kind == ActivityKind.Producer);
        var processes = exported.Where(span => span.Kind == ActivityKind.Consumer).OrderBy(span => span.StartTimeUtc).ToList();
        Assert.Equal(["1", "2", "3"], processes.Select(span => Convert.ToString(span.GetTagItem("boundedwork.attempt"), System.Globalization.CultureInfo.InvariantCulture)));
        Assert.Equal(["retry", "dead_letter", "completed"], processes.Select(span => (string?)span.GetTagItem("boundedwork.outcome")));
        Assert.Equal([ActivityStatusCode.Error, ActivityStatusCode.Error, ActivityStatusCode.Unset], processes.Select(span => span.Status));
        Assert.All(processes, span =>
        {
            Assert.Equal(send.TraceId, span.TraceId);
            Assert.Equal(send.SpanId, span.ParentSpanId);
            Assert.Equal(send.SpanId, Assert.Single(span.Links).Context.SpanId);
            Assert.Equal(id.ToString(System.Globalization.CultureInfo.InvariantCulture), span.GetTagItem("messaging.message.id"));
        });
    }

    /// <summary>What the handler saw: the first two deliveries fail, the third succeeds.</summary>
    public sealed class Deliveries
    {
        private int _count;

        public TaskCompletionSource FailedSource { get; } = new(TaskCreationOptions.RunContinuationsAsynchronously);

        public TaskCompletionSource SucceededSource { get; } = new(TaskCreationOptions.RunContinuationsAsynchronously);

        public Task Failed => FailedSource.Task;

        public Task Succeeded => SucceededSource.Task;

        public int Next() => Interlocked.Increment(ref _count);
    }

    public sealed class FlakyHandler(Deliveries deliveries) : IBlockingWorkHandler<Callback>
    {
        public void Handle(Callback item, CancellationToken cancellationToken)
        {
            var delivery = deliveries.Next();
            if (delivery <= 2)
            {
                if (delivery == 2)
                {
                    deliveries.FailedSource.TrySetResult();
                }

                throw new InvalidOperationException("delivery " + delivery + " fails");
            }

            deliveries.SucceededSource.TrySetResult();
        }
    }
}
