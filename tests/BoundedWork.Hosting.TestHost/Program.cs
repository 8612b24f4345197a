using BoundedWork.Hosting;
using BoundedWork.Hosting.TestHost;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Hosting;
using Microsoft.Extensions.Logging;

// Usage: BoundedWork.Hosting.TestHost <outbox file> <shutdown timeout in seconds>
// Queues one payment callback that never returns and five behind it, prints READY, and waits for SIGTERM.
var builder = Host.CreateApplicationBuilder();
builder.Logging.ClearProviders();
builder.Logging.AddSimpleConsole(o => o.SingleLine = true);
builder.Services.Configure<HostOptions>(o => o.ShutdownTimeout = TimeSpan.FromSeconds(double.Parse(args[1], System.Globalization.CultureInfo.InvariantCulture)));
builder.Services.AddBoundedExecutor("payments", o =>
{
    o.WorkerCount = 1;
    o.QueueCapacity = 100;
    o.RejectionPolicy = BoundedWork.RejectionPolicy.Wait;
});
builder.Services.AddSingleton(new OutboxFile(args[0]));
builder.Services.AddSingleton<LegacyPayments>();
builder.Services.AddSingleton<PaymentCallbacks>();
builder.Services.AddScoped<OutboxDb>();
builder.Services.AddScoped<IAbandonedWorkHandler, PaymentOutbox>();
builder.Services.AddHostedService<CallbackSource>();
await builder.Build().RunAsync();
