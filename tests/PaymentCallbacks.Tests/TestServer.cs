using System.Net.Http.Json;
using System.Text;
using Microsoft.AspNetCore.Builder;
using Microsoft.Extensions.DependencyInjection;
using PaymentCallbacks.Server;
using PaymentCallbacks.Shared;

namespace PaymentCallbacks.Tests;

/// <summary>The sample's real server on real Kestrel at 127.0.0.1, a free port, with a gated dependency.</summary>
internal sealed class TestServer : IAsyncDisposable
{
    /// <summary>A generous limit for waits that normally end in milliseconds; never a pass condition.</summary>
    public static readonly TimeSpan Safety = TimeSpan.FromSeconds(30);

    private TestServer(WebApplication app, GatedDependency dependency)
    {
        App = app;
        Dependency = dependency;
        BaseUrl = new Uri(CallbackServer.GetAddress(app) + "/");
        Client = new HttpClient { BaseAddress = BaseUrl, Timeout = Safety };
    }

    public WebApplication App { get; }

    public GatedDependency Dependency { get; }

    public Uri BaseUrl { get; }

    public HttpClient Client { get; }

    public static async Task<TestServer> StartAsync(string environment = "Development", params string[] settings)
    {
        var dependency = new GatedDependency();
        var app = CallbackServer.Build(
            ["--port", "0", "--environment", environment, "--ShutdownTimeoutSeconds", "0", .. settings],
            services => services.AddSingleton<IPaymentDependency>(dependency));
        await app.StartAsync();
        return new TestServer(app, dependency);
    }

    public Task<HttpResponseMessage> PostCallbackAsync(string endpoint, long orderId) =>
        Client.PostAsync(
            "callbacks/" + endpoint,
            new StringContent($$"""{"orderId":{{orderId}},"amount":10}""", Encoding.UTF8, "application/json"));

    public async Task<ServerStats> StatsAsync() =>
        (await Client.GetFromJsonAsync("stats", StatsJson.Default.ServerStats))!;

    public async ValueTask DisposeAsync()
    {
        Dependency.Open();
        await App.StopAsync();
        await App.DisposeAsync();
        Client.Dispose();
    }
}
