using System.Text.Json;
using Microsoft.AspNetCore.Builder;
using Microsoft.AspNetCore.Hosting;
using Microsoft.AspNetCore.Hosting.Server;
using Microsoft.AspNetCore.Hosting.Server.Features;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Logging;

namespace BoundedWork.Docs.Tests;

/// <summary>A real admin console on Kestrel, for the tests that compare what the documents say with what it serves.</summary>
internal static class RealConsole
{
    /// <summary>
    /// Starts an app with executor "payments", the services <paramref name="services"/> adds and the console (anonymous),
    /// reads <paramref name="path"/> (under <c>/bounded-work</c>) once as JSON, and stops it.
    /// </summary>
    public static Task<JsonElement> GetAsync(string path, Action<IServiceCollection>? services = null) =>
        SendAsync(HttpMethod.Get, path, body: null, services);

    /// <summary>As <see cref="GetAsync"/>, with any method and a JSON body (a change: it carries the console's header); returns the answer's JSON whatever its status.</summary>
    public static async Task<JsonElement> SendAsync(HttpMethod method, string path, string? body, Action<IServiceCollection>? services = null)
    {
        var builder = WebApplication.CreateSlimBuilder();
        builder.WebHost.UseUrls("http://127.0.0.1:0");
        builder.Logging.ClearProviders();
        builder.Services.AddBoundedExecutor("payments");
        services?.Invoke(builder.Services);
        builder.Services.AddBoundedWorkAdmin();
        await using var app = builder.Build();
        app.MapBoundedWorkAdmin().AllowAnonymousAdmin();
        await app.StartAsync();
        try
        {
            var address = app.Services.GetRequiredService<IServer>().Features.Get<IServerAddressesFeature>()!.Addresses.Single();
            using var client = new HttpClient { BaseAddress = new Uri(address) };
            using var request = new HttpRequestMessage(method, "/bounded-work" + path);
            if (body is not null)
            {
                request.Content = new StringContent(body, System.Text.Encoding.UTF8, "application/json");
                request.Headers.Add("X-BoundedWork-Admin", "1");
            }

            using var response = await client.SendAsync(request);
            using var document = JsonDocument.Parse(await response.Content.ReadAsStringAsync());
            return document.RootElement.Clone();
        }
        finally
        {
            await app.StopAsync();
        }
    }
}
