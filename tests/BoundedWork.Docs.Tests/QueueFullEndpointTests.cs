using System.Net;
using System.Net.Http.Json;
using Microsoft.AspNetCore.Builder;
using Microsoft.AspNetCore.Hosting;
using Microsoft.AspNetCore.Hosting.Server;
using Microsoft.AspNetCore.Hosting.Server.Features;
using Microsoft.AspNetCore.Http;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Logging;

namespace BoundedWork.Docs.Tests;

/// <summary>
/// The README's "When the queue is full" endpoint, on real Kestrel: accepted while there is room, 503 with
/// Retry-After at once when the queue is full, without holding a thread.
/// </summary>
public sealed class QueueFullEndpointTests
{
    public sealed record Receipt(string OrderId, string Email);

    /// <summary>A mailer whose first send blocks until the test releases it, so the queue can be filled.</summary>
    public sealed class GatedMailer : IDisposable
    {
        private readonly ManualResetEventSlim _release = new(false);

        public SemaphoreSlim Started { get; } = new(0);

        public void Send(Receipt receipt)
        {
            Started.Release();
            _release.Wait(TimeSpan.FromSeconds(30));
        }

        public void Open() => _release.Set();

        public void Dispose()
        {
            _release.Set();
            _release.Dispose();
            Started.Dispose();
        }
    }

    [Fact]
    public async Task PostReceipt_QueueFull_Returns503WithRetryAfter_ThenAcceptsOnceThereIsRoom()
    {
        using var mailer = new GatedMailer();
        var builder = WebApplication.CreateSlimBuilder();
        builder.WebHost.UseUrls("http://127.0.0.1:0");
        builder.Logging.ClearProviders();
        builder.Services.AddBoundedExecutor("mail", o =>
        {
            o.WorkerCount = 1;
            o.QueueCapacity = 1;
        });
        builder.Services.AddSingleton(mailer);
        await using var app = builder.Build();
        app.MapPost("/receipts", (Receipt receipt, [FromKeyedServices("mail")] BoundedExecutor executor, GatedMailer mailer, HttpResponse response) =>
        {
            if (executor.TryExecute(mailer.Send, receipt))
            {
                return Results.Accepted();
            }

            response.Headers.RetryAfter = "5";
            return Results.StatusCode(StatusCodes.Status503ServiceUnavailable);
        });
        await app.StartAsync();
        try
        {
            var address = app.Services.GetRequiredService<IServer>().Features.Get<IServerAddressesFeature>()!.Addresses.Single();
            using var client = new HttpClient { BaseAddress = new Uri(address) };
            var receipt = new Receipt("order-1", "a@example.com");

            var running = await client.PostAsJsonAsync("/receipts", receipt);
            Assert.True(await mailer.Started.WaitAsync(TimeSpan.FromSeconds(30)), "The first receipt never started.");
            var queued = await client.PostAsJsonAsync("/receipts", receipt);
            var refused = await client.PostAsJsonAsync("/receipts", receipt);

            Assert.Equal(HttpStatusCode.Accepted, running.StatusCode);
            Assert.Equal(HttpStatusCode.Accepted, queued.StatusCode);
            Assert.Equal(HttpStatusCode.ServiceUnavailable, refused.StatusCode);
            Assert.Equal(TimeSpan.FromSeconds(5), refused.Headers.RetryAfter?.Delta);
            var executor = app.Services.GetRequiredKeyedService<BoundedExecutor>("mail");
            Assert.Equal(1, executor.GetStatistics().Rejected); // counted, and reported to OnRejected and the log

            mailer.Open();
            Assert.True(SpinWait.SpinUntil(() => executor.GetStatistics() is { QueueLength: 0, BusyWorkerCount: 0 }, TimeSpan.FromSeconds(30)), "The queue did not drain.");
            Assert.Equal(HttpStatusCode.Accepted, (await client.PostAsJsonAsync("/receipts", receipt)).StatusCode);
        }
        finally
        {
            mailer.Open();
            await app.StopAsync();
        }
    }
}
