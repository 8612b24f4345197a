using System.Diagnostics;
using System.Net.Http.Json;
using BoundedWork.Hosting;
using BoundedWork.OpenTelemetry.TestConsumer;
using BoundedWork.PostgreSql;
using Microsoft.AspNetCore.Builder;
using Microsoft.AspNetCore.Hosting;
using Microsoft.AspNetCore.Hosting.Server;
using Microsoft.AspNetCore.Hosting.Server.Features;
using Microsoft.AspNetCore.Http;
using Microsoft.AspNetCore.Http.Features;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Logging;
using OpenTelemetry.Trace;

namespace BoundedWork.OpenTelemetry.Tests;

/// <summary>
/// One trace from the HTTP request that enqueues a durable item to the handler that runs it in another process, with
/// the real OpenTelemetry SDK and its in-memory exporter on both sides.
/// </summary>
[Collection(TelemetryCollection.Name)]
public sealed class DurableTraceTests(PostgresFixture postgres)
{
    private const string Queue = "callbacks";

    [Fact]
    public async Task HttpRequestEnqueues_ChildProcessHandles_TheExportedSpansFormOneTrace()
    {
        var schema = PostgresFixture.NewSchema();
        var producerSpans = new List<Activity>();
        long itemId;
        List<ExportedSpan> consumerSpans;
        await using (var producer = await StartProducerAsync(schema, producerSpans))
        {
            await using var consumer = await TracedConsumerProcess.StartAsync(postgres.ConnectionString, schema, Queue);
            using (var client = new HttpClient { BaseAddress = producer.Address })
            {
                var response = await client.PostAsync(new Uri("/callbacks/order-42", UriKind.Relative), content: null);
                Assert.True(response.IsSuccessStatusCode, await response.Content.ReadAsStringAsync());
                itemId = await response.Content.ReadFromJsonAsync<long>();
            }

            Assert.Equal(itemId, await consumer.Handled.WaitAsync(TracedConsumerProcess.Patience));
            consumerSpans = await consumer.StopAsync();
        }

        // The producer app has stopped: its request span has ended and the provider has flushed.
        var request = Assert.Single(producerSpans, span => span.Kind == ActivityKind.Server);
        var send = Assert.Single(producerSpans, span => span.Source.Name == PostgreSqlWorkQueueDiagnostics.ActivitySourceName);
        Assert.Equal("send " + Queue, send.DisplayName);
        Assert.Equal(ActivityKind.Producer, send.Kind);
        Assert.Equal(request.SpanId, send.ParentSpanId);
        Assert.Equal(request.TraceId, send.TraceId);
        Assert.Equal("boundedwork", send.GetTagItem("messaging.system"));
        Assert.Equal(Queue, send.GetTagItem("messaging.destination.name"));
        Assert.Equal("send", send.GetTagItem("messaging.operation.type"));
        Assert.Equal(itemId.ToString(System.Globalization.CultureInfo.InvariantCulture), send.GetTagItem("messaging.message.id"));

        var traceId = request.TraceId.ToHexString();
        var process = Assert.Single(consumerSpans, span => span.Source == PostgreSqlWorkQueueDiagnostics.ActivitySourceName);
        Assert.Equal("process " + Queue, process.Name);
        Assert.Equal(nameof(ActivityKind.Consumer), process.Kind);
        Assert.Equal(traceId, process.TraceId);
        Assert.Equal(send.SpanId.ToHexString(), process.ParentSpanId);
        Assert.Equal([send.SpanId.ToHexString()], process.LinkedSpanIds);
        Assert.Equal("boundedwork", process.Tags["messaging.system"]);
        Assert.Equal(Queue, process.Tags["messaging.destination.name"]);
        Assert.Equal("process", process.Tags["messaging.operation.type"]);
        Assert.Equal(send.GetTagItem("messaging.message.id"), process.Tags["messaging.message.id"]);
        Assert.Equal("1", process.Tags["boundedwork.attempt"]);
        Assert.Equal("completed", process.Tags["boundedwork.outcome"]);

        var run = Assert.Single(consumerSpans, span => span.Source == BoundedWorkDiagnostics.ActivitySourceName);
        Assert.Equal(BoundedWorkDiagnostics.RunActivityName, run.Name);
        Assert.Equal(process.SpanId, run.ParentSpanId);
        var ledger = Assert.Single(consumerSpans, span => span.Source == LedgerHandler.SourceName);
        Assert.Equal(run.SpanId, ledger.ParentSpanId);
        Assert.Equal("order-42", ledger.Tags["order.id"]);

        // Nothing either process exported lies outside the trace.
        Assert.All(producerSpans, span => Assert.Equal(traceId, span.TraceId.ToHexString()));
        Assert.All(consumerSpans, span => Assert.Equal(traceId, span.TraceId));
        Assert.Equal(3, consumerSpans.Count);
    }

    private async Task<Producer> StartProducerAsync(string schema, List<Activity> exported)
    {
        var builder = WebApplication.CreateSlimBuilder();
        builder.WebHost.UseUrls("http://127.0.0.1:0");
        builder.Logging.ClearProviders();
        builder.Services.AddOpenTelemetry().WithTracing(tracing => tracing
            .AddAspNetCoreInstrumentation()
            .AddBoundedWorkInstrumentation()
            .AddInMemoryExporter(exported));
        builder.Services
            .AddWorkQueue<Callback, LedgerHandler>(Queue)
            .UsePostgreSql(postgres.ConnectionString, CallbackJson.Default.Callback, o =>
            {
                o.Schema = schema;
                o.Consume = false;
            });
        var app = builder.Build();
        app.MapPost("/callbacks/{orderId}", static async (string orderId, IPostgreSqlWorkQueue<Callback> queue, CancellationToken cancellationToken) =>
            Results.Ok(await queue.EnqueueWithIdAsync(new Callback(orderId), cancellationToken)));
        try
        {
            await app.StartAsync();
        }
        catch
        {
            await app.DisposeAsync();
            throw;
        }

        var address = app.Services.GetRequiredService<IServer>().Features.GetRequiredFeature<IServerAddressesFeature>().Addresses.Single();
        return new Producer(app, new Uri(address));
    }

    /// <summary>The producer app; stopping it ends its spans and flushes its tracer provider.</summary>
    private sealed class Producer(WebApplication app, Uri address) : IAsyncDisposable
    {
        public Uri Address { get; } = address;

        public async ValueTask DisposeAsync()
        {
            try
            {
                await app.StopAsync();
            }
            finally
            {
                await app.DisposeAsync();
            }
        }
    }
}
